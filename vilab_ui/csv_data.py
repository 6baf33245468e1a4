"""The "your CSV file" panel shared by the regression pages (Adam vs SNNGM, Trajectories).

:func:`csv_panel` draws the upload box and the choices of the model (logistic or Poisson regression),
the response, the predictors, standardising, the intercept and what to do with missing values, and
returns the fitted model's data as a :class:`CsvModel`, or None (with a message saying why) while no
valid file is loaded: the page then keeps its default data. Every choice is URL-synced through the
vilab_ui widgets; the file itself cannot be in a URL (the panel says so). Reading and checking are
vilab.targets.tabular's (ValueError sentences, shown as warnings).

Fits on a user's data run when the student presses Fit, as the CNN lab trains when Train is pressed:
:func:`fit_buttons` draws Fit and Stop, :func:`fit_within_budget` runs the fits in turn for at most
:data:`FIT_BUDGET_S` seconds per press (``$VILAB_FIT_BUDGET_S``), each with ``max_time`` (vilab.core stops
it with status "max_time") and a progress bar (Stop interrupts the run at its next report; the fits that
finished stay).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass
from typing import Callable

import streamlit as st

import vilab_ui as ui
from vilab.targets import tabular

__all__ = ["CSV_CHOICE", "FIT_BUDGET_S", "CsvModel", "csv_panel", "coefficient_pair", "display_name", "fit_buttons", "fit_on_press",
           "fit_within_budget"]

CSV_CHOICE = "your CSV file"
# one press of Fit computes on a user's data for at most this long, whatever was chosen (a server's owner may
# change it): a large file costs seconds per step
FIT_BUDGET_S = float(os.environ.get("VILAB_FIT_BUDGET_S", "90"))
FIT_CHUNK = 50  # steps between two reports of a fit on a user's data: Stop and the budget act this often
_FAMILY_TEXT = {"logistic": "logistic regression (response 0/1)", "poisson": "Poisson regression (counts)"}


def display_name(name, limit: int = 32) -> str:
    """A column name as figure titles and choices show it: no characters that could make markup, cut to
    ``limit`` characters."""
    s = re.sub(r"[<>&\\`*_\[\]$|#]+", " ", str(name)).strip()
    s = re.sub(r"\s+", " ", s) or "?"
    return s if len(s) <= limit else s[: limit - 1] + "…"


@dataclass(frozen=True)
class CsvModel:
    """A user's data as the pages use them: the GLM (``model``, a vilab GLMModel), a hashable key for
    caches (``key``), and how it was made (``family`` "logistic" / "poisson", ``n_dropped``)."""

    model: object
    key: tuple
    family: str
    n_dropped: int

    @property
    def names(self) -> tuple:
        return tuple(display_name(n) for n in self.model.feature_names)


@ui.cache_data(max_entries=16, ttl=3600)
def _read(digest: str, _raw: bytes):
    return tabular.read_csv(_raw, "Your file")


@ui.cache_resource(max_entries=16, ttl=3600)
def _model(digest: str, family: str, response: str, predictors: tuple, std: bool, icpt: bool, drop: bool, _df):
    return tabular.glm_model(_df, response, list(predictors), family, std, icpt, drop)


def _digest(up) -> str:
    seen = f"_csv_digest_{up.file_id}"
    if seen not in st.session_state:  # hashed once per upload, not on every rerun
        st.session_state[seen] = hashlib.sha256(up.getvalue()).hexdigest()
    return st.session_state[seen]


def csv_panel(upload_key: str, fallback: str, families=("logistic", "poisson"), min_d: int = 2) -> CsvModel | None:
    """The CSV panel (call it inside the page's controls column). ``upload_key``: the uploader's widget
    key (one per page); ``fallback``: what the page shows meanwhile, in words ("the simulated data").

    URL keys: fam (model), resp (response), pred (predictors), std, icpt, drop (on/off)."""
    mb = tabular.LIMITS["file_mb"]
    up = st.file_uploader(f"Your CSV file (at most {mb} MB)", type=["csv"], key=upload_key, max_upload_size=mb,
                          help="Limits: " + tabular.limits_text() + ".")
    st.caption("Limits: " + tabular.limits_text() + ". A link to this page keeps the choices below but not the "
               "file: whoever opens it uploads the file again.")
    family = ui.radio("Model", "fam", list(families), families[0], format_func=_FAMILY_TEXT.get)
    if up is None:
        st.info(f"Choose a CSV file; until then the page shows {fallback}.")
        return None
    df = None
    with ui.guard():
        df = _read(_digest(up), up.getvalue())
    if df is None:
        st.info(f"The page shows {fallback} until the file is fixed.")
        return None
    digest = _digest(up)
    cols = list(df.columns)
    numeric = tabular.numeric_columns(df)
    # the columns that fit the model first; a new model re-picks the response if the chosen one does not fit it
    fits = tabular.response_columns(df, family)
    mark = f"_csv_family_{upload_key}"
    if st.session_state.get(mark) not in (None, family) and st.session_state.get("resp") not in fits and fits:
        st.session_state["resp"] = tabular.default_response(df, family)
    st.session_state[mark] = family
    response = ui.select("Response (the column to predict)", "resp", fits + [c for c in cols if c not in fits],
                         tabular.default_response(df, family), format_func=display_name)
    others = [c for c in cols if c != response]
    label = {c: display_name(c) + ("" if c in numeric else " (text)") for c in others}
    predictors = ui.multiselect("Predictors", "pred", others, [c for c in others if c in numeric],
                                format_func=label.get, help="Default: every other column of numbers.")
    c1, c2 = st.columns(2)
    with c1:
        std = ui.checkbox("standardise", "std", True, help="each predictor minus its mean, divided by its sd")
    with c2:
        icpt = ui.checkbox("intercept", "icpt", True, help="a column of ones first")
    drop = ui.checkbox("drop rows with missing values", "drop", False,
                       help="Off: a missing value is an error that says where it is.")
    out = None
    with ui.guard():
        model = _model(digest, family, response, tuple(predictors), std, icpt, drop, df)
        out = CsvModel(model, (digest[:16], family, response, tuple(predictors), std, icpt, drop), family,
                       model.info["design"].n_dropped)
    if out is not None and out.model.d < min_d:
        st.warning(f"This page needs at least {min_d} coefficients: choose a predictor (or keep the intercept).")
        out = None
    if out is None:
        st.info(f"The page shows {fallback} until the file or the choices are fixed.")
        return None
    dropped = f", {out.n_dropped} rows with missing values left out" if out.n_dropped else ""
    st.caption(ui.plain(f"Your data: {out.model.n} rows, d = {out.model.d} coefficients{dropped}; prior N(0, 100 I)."))
    return out


def coefficient_pair(csv: CsvModel) -> tuple[int, int]:
    """For a fit with more than two coefficients, two selects (URL keys cx, cy) choosing the pair shown;
    (0, 1) for a 2-D fit."""
    d = csv.model.d
    if d <= 2:
        return 0, 1
    names = csv.names
    opts = list(range(d))
    fmt = lambda k: f"{k}: {names[k]}"  # noqa: E731
    i = ui.select("coefficient on the x axis", "cx", opts, 0, format_func=fmt,
                  help=f"The fit has {d} coefficients; the figure shows two of them.")
    j = ui.select("coefficient on the y axis", "cy", opts, 1, format_func=fmt)
    if i == j:
        j = (i + 1) % d
        st.caption("The two axes must differ: the y axis shows the next coefficient.")
    return int(i), int(j)


def fit_buttons(key: str, what: str = "the fits") -> bool:
    """The Fit and Stop buttons of a page's fits on a user's data (the CNN lab's Train and Stop), with a
    caption stating the budget; True when Fit was pressed."""
    b1, b2, _ = st.columns([1, 1, 3])
    go = b1.button("Fit", key=f"{key}_fit", type="primary", help=f"Runs {what} on your data.")
    b2.button("Stop", key=f"{key}_stop", help="Ends the fitting; the fits that finished are kept.")
    st.caption(f"Your data are fitted when you press Fit: one press computes for at most {FIT_BUDGET_S:g} seconds; "
               "what finished is kept for the next press.")
    return go


def fit_on_press(key: str, jobs: dict, fit: Callable, *, what: str = "the chosen methods", noun: str = "fits",
                 fewer: str = "methods or steps", status: Callable = lambda r: r.status) -> tuple[dict, list]:
    """Fit and Stop (:func:`fit_buttons`) for ``{job: label}`` on the user's data: ``fit(job)`` gives a finished
    result or None; on a press the unfinished jobs run within the budget (:func:`fit_within_budget`) and a
    warning names those cut short (``status(result) == "max_time"``) or not run; an info line names the jobs not
    finished. Returns ({job: result or None}, [labels of the jobs not finished])."""
    fitted = {job: fit(job) for job in jobs}
    if fit_buttons(key, what):
        new, skipped = fit_within_budget({j: lab for j, lab in jobs.items() if fitted[j] is None}, fit)
        fitted.update(new)
        cut = [jobs[j] for j, r in new.items() if status(r) == "max_time"]
        if skipped or cut:
            st.warning(f"One press of Fit computes for at most {FIT_BUDGET_S:g} seconds: "
                       + (f"cut short: {', '.join(cut)}. " if cut else "")
                       + (f"not run: {', '.join(skipped)}. " if skipped else "")
                       + f"Press Fit again to go on with the ones not finished, or choose fewer {fewer}.")
    missing = [lab for j, lab in jobs.items() if fitted[j] is None or status(fitted[j]) == "max_time"]
    if missing:
        st.info(f"Press Fit to fit your data: {len(missing)} of {len(jobs)} {noun} with these settings are not "
                f"finished yet ({', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''}).")
    return fitted, missing


def fit_within_budget(jobs: dict, fit: Callable, budget_s: float | None = None) -> tuple[dict, list]:
    """Run ``fit(job, progress, max_time)`` for each ``{job: label}`` in turn under one progress bar, for at
    most ``budget_s`` (:data:`FIT_BUDGET_S`) seconds in all; ``fit`` passes ``max_time`` and ``progress``
    (fraction done) to the run. Returns ({job: result} of the jobs run, [labels of the jobs not run]); a
    result with status "max_time" was cut short by the budget."""
    budget_s = FIT_BUDGET_S if budget_s is None else float(budget_s)
    out, skipped = {}, []
    if not jobs:
        return out, skipped
    bar = st.progress(0.0, text="fitting your data ...")
    t0 = time.monotonic()
    for i, (job, label) in enumerate(jobs.items()):
        left = budget_s - (time.monotonic() - t0)
        if left <= 0:
            skipped.append(label)
            continue

        def progress(f, i=i, label=label):
            bar.progress(min(1.0, (i + float(f)) / len(jobs)), text=f"{label}: {float(f):.0%}")

        out[job] = fit(job, progress, left)
    bar.empty()
    return out, skipped
