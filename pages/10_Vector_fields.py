"""Vector fields: Euclidean vs natural gradients of the ELBO in the (mu, sigma^2) plane (Tan 2025 Fig. 1, Table 2)."""

from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab_ui import starts as starts_ui
from vilab import fields as vf
from vilab.plots import fields as fplots
from vilab.targets import gaussian_target
from vilab.targets.papers import horseshoe_crab_toy

ui.page(
    "Vector fields",
    "The ELBO of a one-dimensional Gaussian q = N(mu, sigma^2), seen as a landscape over (mu, sigma^2). "
    "The Euclidean gradient has a huge vertical component near sigma^2 = 0 (the entropy term "
    "1/(2 sigma^2) explodes), so gradient ascent zigzags with tiny steps; the natural gradient rescales it by "
    "the inverse Fisher information and points at the mode. The natural field is the same tangent field "
    "whatever the coordinates: in natural parameters its flow lines on a Gaussian target are straight.",
)
st.latex(r"\tilde\nabla L=F^{-1}\nabla L=\big(\sigma^2\,\partial_\mu L,\ 2\sigma^4\,\partial_{\sigma^2}L\big)"
         r"\qquad\text{(Tan 2025, Table 1, }\kappa=(\mu,\sigma^2))")

RULES = {"Euclidean (kappa)": "gd-mv", "Natural (kappa)": "kappa", "Natural (xi)": "xi", "Natural (lambda)": "lambda",
         "Cholesky C = sigma (Thm 1(i))": "tan-1N", "Cholesky T = 1/sigma (Thm 1(ii))": "tan-2N",
         "T with Corollary 1": "tan-2N-cor1"}
TABLE2 = list(RULES)[:4]
CRAB, GAUSS = "horseshoe crabs (Poisson, Tan Fig. 1)", "Gaussian N(m, 1/a)"
PAPER_STARTS = "0,0.1; 0.5,0.02; 2,0.01"
GAUSS_STARTS = "-1.5,2.25; 2.5,0.0125"  # Kumar digest T1: (m0, sigma0) = (-1.5, 1.5)
M_TARGET = 1.0  # Kumar digest T1: N(1, 1/a)


@st.cache_resource(show_spinner=False)
def _target(kind, a):
    if kind == CRAB:
        return horseshoe_crab_toy()
    return gaussian_target(np.array([M_TARGET]), precision=np.array([[a]]), name=f"N({M_TARGET:g}, 1/{a:g})")


@st.cache_data(show_spinner=False, max_entries=2048)
def _path(tkey, rule, mu0, s20, schedule, step):
    tr = vf.run_1d(RULES[rule], _target(*tkey), mu0, s20, step, schedule=schedule, rel_tol=1e-7, n_steps=1000)
    rmin = float(np.min(tr.step_sizes)) if tr.n_steps else np.nan
    return tr.mean[:, 0], tr.cov[:, 0, 0], tr.status, tr.n_steps, rmin


@st.cache_data(show_spinner=False, max_entries=128)
def _grid(tkey, chart, window_xy, n):
    return vf.chart_grid(_target(*tkey), chart, window_xy, n)


def _add_start(starts_key, mu=None, s2=None):
    """Append a start to the text box; without (mu, s2), the number inputs' current values."""
    mu = st.session_state.get("nmu") if mu is None else mu
    s2 = st.session_state.get("ns2") if s2 is None else s2
    try:
        st.session_state[starts_key] = starts_ui.append_start(st.session_state.get(starts_key, ""), float(mu), float(s2))
    except (ValueError, TypeError) as exc:  # not added: a full list (the message says so) or an invalid point
        st.session_state["_vf_start_msg"] = str(exc)


def _add_click(plot_key, starts_key, chart):
    xy = ui.selected_point(st.session_state.get(plot_key))
    if xy is not None:
        try:
            mu, s2 = vf.from_chart(*xy, chart)
        except ValueError:
            return
        _add_start(starts_key, float(mu), float(s2))


# ------------------------------------------------------------------------------------------ controls
c1, c2, c3 = st.columns(3)
with c1:
    tname = ui.radio("target", "tgt", [CRAB, GAUSS], CRAB)
    crab = tname == CRAB
    a = 4.0 if crab else ui.log_slider("target precision a (target N(1, 1/a))", "a", 0.04, 400.0, 4.0)
    chart = ui.select("coordinates", "chart", list(vf.CHARTS), vf.CHARTS[0])
with c2:
    normalise = ui.toggle("normalise arrows (direction only)", "norm", True)
    n_arrows = ui.slider("arrows per axis", "na", 8, 30, 17)
    schedule = ui.radio("step-size rule", "rule", ["backtracking (Tan Sec. 4.1)", "fixed"],
                        "backtracking (Tan Sec. 4.1)")
    step = ui.log_slider("fixed step size rho", "rho", 1e-6, 1.0, 0.01) if schedule == "fixed" else 1.0
with c3:
    starts_key = "starts" if crab else "gstarts"
    starts_text = ui.text("starting points 'mu,sigma^2; ...' (or click a plot)", starts_key,
                          PAPER_STARTS if crab else GAUSS_STARTS)
    n1, n2 = st.columns(2)
    with n1:
        ui.number("new start: mu", "nmu", -50.0, 50.0, 1.0, 0.1)
    with n2:
        ui.number("new start: sigma^2", "ns2", 1e-6, 1e3, 0.05, 0.01, format="%.4g")
    b1, b2 = st.columns(2)
    b1.button("add this start", key="add_start", on_click=_add_start, args=(starts_key,))
    b2.button("reset starts", key="reset_starts", on_click=st.session_state.__setitem__,
              args=(starts_key, PAPER_STARTS if crab else GAUSS_STARTS))
    rules = ui.multiselect("update rules", "rules", list(RULES), TABLE2)
    start_msg = st.session_state.pop("_vf_start_msg", None)
    if start_msg:
        st.info(start_msg)

tkey = (tname, float(a))
sched = "backtracking" if schedule.startswith("backtracking") else "constant"

with ui.guard("vector fields"):
    target = _target(*tkey)
    starts = starts_ui.parse_starts(starts_text, max_starts=None)
    if len(starts) > starts_ui.MAX_STARTS:
        st.info(f"Only the first {starts_ui.MAX_STARTS} of the {len(starts)} starting points are drawn; remove some from "
                "the text box to draw the others.")
        starts = starts[: starts_ui.MAX_STARTS]
    if crab:
        opt = target.info["optimum"]
        window = ((-0.25, 2.25), (0.0005, 0.11))
    else:
        opt = (M_TARGET, 1.0 / a)
        window = ((M_TARGET - 3.0, M_TARGET + 3.0), (0.02 / a, 3.0 / a))
    window = ((min(window[0][0], min(m for m, _ in starts) - 0.1), max(window[0][1], max(m for m, _ in starts) + 0.1)),
              (min(window[1][0], 0.5 * min(s for _, s in starts)), max(window[1][1], 1.05 * max(s for _, s in starts))))
    box = vf.chart_window(chart, window, points=list(starts) + [opt])
    arrows = _grid(tkey, chart, box, int(n_arrows))
    fine = _grid(tkey, chart, box, 80)
    ox, oy = (float(v) for v in vf.to_chart(opt[0], opt[1], chart))
    L_opt = float(vf.elbo_grads_1d(target, opt[0], opt[1])[0])

    eu_paths, na_paths, rows = {}, {}, []
    for mu0, s20 in starts:
        row = {"start": f"({mu0:g}, {s20:g})"}
        for r in rules:
            pm, ps, status, its, rmin = _path(tkey, r, mu0, s20, sched, float(step))
            px, py = vf.to_chart(pm, ps, chart)
            (eu_paths if RULES[r] == "gd-mv" else na_paths)[f"{r} from {row['start']}"] = (px, py, status, r)
            row[r] = f"{its} ({rmin:.0e})" if status == "converged" else f"{its}: {status}"
        rows.append(row)

    xlabel, ylabel = vf.chart_labels(chart)
    click = (np.linspace(*box[0], 40), np.linspace(*box[1], 40))
    left, right = st.columns(2)
    for col, key, field, paths, title in [(left, "euclid_plot", "E", eu_paths, "Euclidean gradient field"),
                                          (right, "natural_plot", "N", na_paths, "natural gradient field")]:
        with col:
            st.markdown(f"**{title}**")
            fig = fplots.field_figure(arrows["xs"], arrows["ys"], arrows[field + "x"], arrows[field + "y"],
                                      objective=fine["L"], objective_xy=(fine["xs"], fine["ys"]), objective_max=L_opt,
                                      optimum=(ox, oy), paths=paths, normalise=normalise,
                                      xlabel=xlabel, ylabel=ylabel, click_grid=click)
            ui.show(fig, key=key, on_select=partial(_add_click, key, starts_key, chart), selection_mode="points")
    st.caption("Contours: the ELBO's gap to its optimum on a log scale (darker = closer). Click either plot to add "
               "a starting point there. Euclidean paths are drawn on the left, natural-gradient paths on the right.")
    st.markdown("**Iterations to convergence (smallest step size used)**, stopping when "
                "|L_new - L_old| < 1e-7 |L_new|" + (" (Tan 2025 Table 2 with the default settings)." if crab else "."))
    st.dataframe(pd.DataFrame(rows).set_index("start"))
