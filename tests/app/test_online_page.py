"""AppTest of the Online learning page: default view, extreme sliders, live runs that diverge or are
refused (reported as warnings, never raised), the precomputed sweeps."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "60_Online_learning.py")


def test_default_view():
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    assert not at.exception
    assert not at.error
    # ellipses, eigenvalues, conjugate densities, precomputed curves + bars, two sweeps
    assert len(at.get("plotly_chart")) >= 7
    assert any("scaled-down analogue" in m.value for m in at.markdown)
    # warnings of the default view: fc_mom's lost positive definiteness, precomputed runs that diverged
    assert all("lost positive definiteness" in w.value or "diverged: " in w.value for w in at.warning)


def test_extreme_noise_and_conjugate_values():
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.query_params.update({"lT": "30", "lR": "0.01", "lt": "30", "ck": "poisson", "cy": "20", "cnu": "0.2", "cchi": "20"})
    at.run()
    assert not at.exception
    # fc_mom loses positive definiteness with a tiny R: said, not raised
    assert any("lost positive definiteness" in w.value for w in at.warning)
    at.radio(key="ck").set_value("bernoulli").run()
    assert not at.exception
    # chi = 20 > nu = 0.2 is no logistic-Beta prior: a warning that says why
    assert any("0 < chi < nu" in w.value for w in at.warning)


def test_live_run_with_extreme_prior_and_learning_rate():
    """sigma_0^2 = 10 and alpha = 1: bbb diverges at the first step and says so; bong survives."""
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params.update({"lm": ["bong-lin-hess-diag", "bbb-lin-hess-diag"], "lTd": "25", "ls2": "10", "lal": "1"})
    at.run()
    assert not at.exception
    at.button(key="lrun").click().run()
    assert not at.exception
    assert not at.error
    assert any("bbb-lin-hess-diag" in w.value and "diverged: " in w.value for w in at.warning)
    assert not any(w.value.startswith("bong-lin-hess-diag") for w in at.warning)
    assert len(at.get("plotly_chart")) >= 9  # + live curves and runtime bars


def test_live_run_tiny_prior_and_learning_rate_and_refused_cells():
    """The other extreme (sigma_0^2 = 1e-3, alpha = 1e-3, I = 10) runs; an O(P^3) cell on the MLP and
    a full covariance on the CNN are refused with an explanation."""
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params.update({"lm": ["blr-lin-hess-diag", "blr-lin-hess-fc"], "lTd": "25", "ls2": "0.001", "lal": "0.001",
                            "lI": "10"})
    at.run()
    at.button(key="lrun").click().run()
    assert not at.exception
    assert not at.error
    assert any("blr-lin-hess-fc" in w.value and "O(P^3)" in w.value for w in at.warning)
    at.radio(key="lmod").set_value("cnn").run()
    at.multiselect(key="lm").set_value(["bong-lin-hess-fc"]).run()
    at.button(key="lrun").click().run()
    assert not at.exception
    assert any("full covariance" in w.value for w in at.warning)


def test_live_results_survive_a_metric_change_and_t_follows_the_stream_length():
    """The Metric choice sits outside the live panel: changing it redraws the last live run in the new
    metric instead of dropping it; the belief slider t runs to the stream length T."""
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params.update({"lm": ["bong-lin-hess-diag"], "lTd": "25", "lmod": "linear"})
    at.run()
    at.button(key="lrun").click().run()
    assert not at.exception and not at.error
    live = [c.proto.spec for c in at.get("plotly_chart") if "live, seed" in c.proto.spec]
    assert len(live) == 1 and "plug-in NLPD" in live[0]
    at.selectbox(key="dmet").set_value("error (plug-in)").run()
    assert not at.exception and not at.error
    live = [c.proto.spec for c in at.get("plotly_chart") if "live, seed" in c.proto.spec]
    assert len(live) == 1 and "error (plug-in)" in live[0]
    assert not any("settings changed" in i.value for i in at.info)
    at.slider(key="lTd").set_value(50).run()
    assert any("settings changed since this live run" in i.value for i in at.info)
    assert any("live, seed" in c.proto.spec for c in at.get("plotly_chart"))
    # t: up to T, its value kept where it can be
    assert (at.slider(key="lt").max, at.slider(key="lt").value) == (10, 3)
    at.slider(key="lT").set_value(2).run()
    assert (at.slider(key="lt").max, at.slider(key="lt").value) == (2, 2)
    at.slider(key="lT").set_value(30).run()
    at.slider(key="lt").set_value(25).run()
    assert not at.exception and (at.slider(key="lt").max, at.slider(key="lt").value) == (30, 25)
