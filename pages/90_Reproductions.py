"""Reproductions: every registered number of the papers, paper vs computed, one button away."""

import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab import repro

ui.page(
    "Reproductions",
    "Each entry recomputes numbers printed in one of the papers and sets them beside the paper's "
    "values, with the tolerance used. Press **Run** to check one yourself; results are cached for "
    "everyone using this server. The same entries run from a terminal: `vilab repro NAME`.",
)


@st.cache_data(show_spinner=False, max_entries=64)
def run_one(name: str) -> repro.Result:
    return repro.run(name)


entries = repro.entries()
if not entries:
    st.info("No reproductions are registered yet.")
    st.stop()

catalogue = pd.DataFrame(
    [{"name": e.name, "paper": e.paper, "reproduces": e.what, "cost": "slow" if e.slow else "fast"} for e in entries]
)
st.dataframe(catalogue, hide_index=True, width="stretch")

names = [e.name for e in entries]
name = ui.select("Reproduction", "r", names, names[0])
entry = repro.get(name)
st.markdown(f"**{entry.name}** ({entry.paper}): {entry.what}")
if entry.settings:
    st.caption(entry.settings)

auto = ui.toggle("Run on page load (for shared links)", "auto", False)
col1, col2 = st.columns(2)
run_this = col1.button("Run this reproduction", type="primary")
run_all = col2.button("Run every fast reproduction")


def show(results: list[repro.Result]) -> None:
    for r in results:
        verdict = "PASS" if r.passed else "FAIL"
        (st.success if r.passed else st.error)(f"{r.name}: {verdict} ({r.seconds:.1f} s)")
    st.dataframe(pd.DataFrame(repro.table_rows(results)), hide_index=True, width="stretch")


with ui.guard("Reproduction"):
    if run_this or auto:
        with st.spinner(f"Computing {name}..."):
            show([run_one(name)])
    elif run_all:
        fast = [e.name for e in entries if not e.slow]
        bar = st.progress(0.0, text="Running reproductions...")
        results = []
        for i, n in enumerate(fast):
            results.append(run_one(n))
            bar.progress((i + 1) / len(fast), text=f"{n} done")
        show(results)
