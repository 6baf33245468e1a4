from pathlib import Path

from streamlit.testing.v1 import AppTest

from vilab import repro

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "90_Reproductions.py")


def test_lists_every_registered_reproduction():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    names = [e.name for e in repro.entries()]
    if names:
        listed = at.dataframe[0].value["name"].tolist()
        assert listed == names
        assert at.selectbox(key="r").options == names


def test_run_button_shows_paper_and_computed_values():
    names = [e.name for e in repro.entries() if not e.slow]
    if not names:
        return  # nothing registered yet: the listing test above covers the empty page
    at = AppTest.from_file(PAGE, default_timeout=600)
    at.query_params["r"] = names[0]
    at.run()
    at.button[0].click().run()
    assert not at.exception
    table = at.dataframe[1].value
    assert {"paper", "computed", "tolerance", "pass"} <= set(table.columns)
    assert (table["reproduction"] == names[0]).all()
    assert at.success or at.error  # a verdict is shown
