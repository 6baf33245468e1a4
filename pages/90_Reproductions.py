"""Reproductions: every registered number of the papers, paper vs computed, one button away."""

import os
import re
import threading
import time

import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab import repro

ui.page(
    "Reproductions",
    "Pick a result of the papers and press **Run**: each reference number, marked *paper* (printed in the paper) or "
    "*derived* (computed by us where the paper gives no number) or *regression* (this same code's earlier output, a "
    "guard against change, not a reproduction), beside the same number recomputed here. Values shown only for context "
    "read REPORTED and never count as a PASS.",
)


# one press of "Run every reproduction" computes for at most this long (a server's owner may change it)
RUN_ALL_BUDGET_S = float(os.environ.get("VILAB_REPRO_BUDGET_S", "600"))


@ui.cache_resource()
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
    return f"{repro.verdict_text(r)} ({r.seconds:.1f} s)"


_NOTES = re.compile(r"\s*\((?:see )?(?:the )?digest[^)]*\)", re.IGNORECASE)


def _clean(text: str) -> str:
    """A registry text as a student reads it (no pointers to the project's internal notes)."""
    return _NOTES.sub("", str(text or "")).strip()


entries = repro.entries()
for module, error in repro.import_errors().items():
    st.error(f"The reproductions of {module} could not be loaded, so they are missing: {error}")
if not entries:
    st.info("No reproductions are registered yet.")
    st.stop()

KIND_FILTER = {"all": None, "paper": "paper", "derived": "derived", "regression": "regression", "mixed": "mixed"}
ctl, main = ui.columns(1, 2)
with ctl:
    shown_kind = ui.radio("Reference values", "kind", list(KIND_FILTER), "all", horizontal=True,
                          help="paper: every reference number is printed in the paper; derived: computed by us for a "
                               "setting the paper does not pin; regression: recorded from this same code; mixed: each "
                               "row says which.")
    listed = [e for e in entries if KIND_FILTER[shown_kind] in (None, e.kind)] or entries
    names = [e.name for e in listed]
    name = ui.select("Reproduction", "r", names, names[0],
                     help="The same entries run from a terminal: vilab repro NAME.")
    entry = repro.get(name)
    st.markdown(f"**{_clean(entry.paper)}**: {_clean(entry.what)}" + (" *(slow: minutes)*" if entry.slow else ""))
    st.caption(f"Reference values: {repro.kind_label(entry.kind)}" + (f" ({_clean(entry.source)})" if entry.source else ""))
    run_this = st.button("Run this reproduction", type="primary", key="run")
    run_all = st.button("Run every reproduction", key="all")
    with ui.more("Settings of this reproduction, and more"):
        if entry.settings:
            st.caption(_clean(entry.settings))
        with_slow = ui.checkbox("'Run every' includes the slow ones (minutes each)", "slow", False)
        auto = ui.toggle("Run on page load (for shared links)", "auto", False)


def show(results: list[repro.Result]) -> None:
    for r in results:
        say = st.success if r.passed else st.info if r.status == "REPORTED" else st.error
        say(f"{r.name}: {_verdict(r)}")
    rows = pd.DataFrame(repro.table_rows(results))
    # the comparison first, the name last
    first = ["quantity", "reference", "paper", "computed", "tolerance", "status", "tolerance from"]
    ui.table(rows[[c for c in first if c in rows] + [c for c in rows if c not in first]], hide_index=True,
             width="stretch")


with main, st.container(key=ui.MAIN_FIGURE):  # the page's main element: results and the registry
        with ui.guard("Reproduction"):
            if run_this or auto:
                with st.spinner(f"Computing {name}..."):
                    show([run_one(name)])
                ui.notice("Each row is one number of the paper: the paper's value, ours, the tolerance within which "
                          "they must agree (relative where marked) and where that tolerance comes from. REPORTED rows "
                          "are shown for context and are not compared. A FAIL is reported, never hidden.")
            elif run_all:
                todo = [e.name for e in listed if with_slow or not e.slow]
                bar = st.progress(0.0, text="Running reproductions...")
                results, t0 = [], time.monotonic()
                for i, n in enumerate(todo):
                    if i and time.monotonic() - t0 > RUN_ALL_BUDGET_S:  # at least one per press
                        st.warning(f"'Run every' computes for at most {RUN_ALL_BUDGET_S:g} seconds per press: "
                                   f"{len(todo) - i} of {len(todo)} were not run this time (press again: the ones done "
                                   "are kept on this server).")
                        break
                    results.append(run_one(n))
                    bar.progress((i + 1) / len(todo), text=f"{n} done")
                show(results)
            elif _store()[0].get(name) is not None:  # computed before on this server
                st.markdown(f"**{name}**, computed on this server earlier:")
                show([_store()[0][name]])
        stored = _store()[0]
        st.markdown("**Every reproduction** (result: computed on this server so far)")
        ui.table(pd.DataFrame([{"name": e.name, "result": _verdict(stored.get(e.name)), "reference": repro.kind_label(e.kind),
                                "cost": "slow" if e.slow else "fast", "paper": _clean(e.paper),
                                "reproduces": _clean(e.what)}
                               for e in listed]), hide_index=True, width="stretch", height=320)
