"""Reproductions: every registered number of the papers, paper vs computed, one button away."""

import threading

import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab import repro

ui.page(
    "Reproductions",
    "Each entry recomputes numbers printed in one of the papers and sets them beside the paper's "
    "values, with the tolerance used. Press **Run** to check one yourself, or run them all; results "
    "are kept for everyone using this server. The same entries run from a terminal: `vilab repro NAME`.",
)


@st.cache_resource(show_spinner=False)
def _store() -> tuple[dict, threading.Lock]:
    """Results computed on this server (name -> repro.Result), shared by every session."""
    return {}, threading.Lock()


def run_one(name: str) -> repro.Result:
    results, lock = _store()
    with lock:
        if name not in results:
            results[name] = repro.run(name)
        return results[name]


def _verdict(r: repro.Result | None) -> str:
    if r is None:
        return "not run yet"
    return f"{'PASS' if r.passed else 'FAIL'} ({r.seconds:.1f} s)"


entries = repro.entries()
for module, error in repro.import_errors().items():
    st.error(f"vilab/repro/{module}.py could not be imported, so its reproductions are missing: {error}")
if not entries:
    st.info("No reproductions are registered yet.")
    st.stop()

catalogue_slot = st.empty()
names = [e.name for e in entries]
name = ui.select("Reproduction", "r", names, names[0])
entry = repro.get(name)
st.markdown(f"**{entry.name}** ({entry.paper}): {entry.what}")
if entry.settings:
    st.caption(entry.settings)

auto = ui.toggle("Run on page load (for shared links)", "auto", False)
col1, col2 = st.columns(2)
run_this = col1.button("Run this reproduction", type="primary")
run_all = col2.button("Run every reproduction")
with ui.more("Which ones 'run every' includes"):
    with_slow = ui.checkbox("include the slow ones (minutes each)", "slow", False)


def show(results: list[repro.Result]) -> None:
    for r in results:
        (st.success if r.passed else st.error)(f"{r.name}: {_verdict(r)}")
    st.dataframe(pd.DataFrame(repro.table_rows(results)), hide_index=True, width="stretch")


with ui.guard("Reproduction"):
    if run_this or auto:
        with st.spinner(f"Computing {name}..."):
            show([run_one(name)])
    elif run_all:
        todo = [e.name for e in entries if with_slow or not e.slow]
        bar = st.progress(0.0, text="Running reproductions...")
        results = []
        for i, n in enumerate(todo):
            results.append(run_one(n))
            bar.progress((i + 1) / len(todo), text=f"{n} done")
        show(results)
    else:
        done = [r for r in (_store()[0].get(n) for n in names) if r is not None]
        if done:
            st.markdown("**Results computed on this server so far**")
            show(done)

stored = _store()[0]
catalogue_slot.dataframe(
    pd.DataFrame([{"name": e.name, "paper": e.paper, "reproduces": e.what, "cost": "slow" if e.slow else "fast",
                   "result": _verdict(stored.get(e.name))} for e in entries]),
    hide_index=True, width="stretch",
)
