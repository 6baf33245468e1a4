"""Vector fields: Euclidean vs natural gradients of the ELBO in the (mu, sigma^2) plane (Tan 2025 Fig. 1, Table 2)."""

import math

import numpy as np
import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab_ui import live as ui_live
from vilab_ui import starts as starts_ui
from vilab.theory import fields as vf
from vilab import plots
from vilab.theory.fields_live import run_1d_schedule
from vilab.plots import fields as fplots
from vilab.targets import gaussian_target
from vilab.targets.papers import horseshoe_crab_toy

ui.page(
    "Vector fields",
    "The ELBO of a one-dimensional Gaussian q = N(μ, σ²) as a landscape: Euclidean gradient ascent (left) "
    "against natural-gradient ascent (right), from the same starting points.",
)

# option strings are URL values (keep them); the screen shows readable names
RULES = {"Euclidean (kappa)": "gd-mv", "Natural (kappa)": "kappa", "Natural (xi)": "xi", "Natural (lambda)": "lambda",
         "Cholesky C = sigma (Thm 1(i))": "tan-1N", "Cholesky T = 1/sigma (Thm 1(ii))": "tan-2N",
         "T with Corollary 1": "tan-2N-cor1"}
# short names for the chips and the table's columns (the legend shows vilab.plots.label)
RULE_TEXT = {"gd-mv": "Euclidean (κ)", "kappa": "natural (κ)", "xi": "natural (ξ)", "lambda": "natural (λ)",
             "tan-1N": "natural (C = σ)", "tan-2N": "natural (T = 1/σ)", "tan-2N-cor1": "natural (T, Cor. 1)"}
TABLE2 = list(RULES)[:4]
CHART_TEXT = {vf.CHARTS[4]: "(μ, log σ²)", vf.CHARTS[0]: "(μ, σ²)", vf.CHARTS[1]: "(μ, σ)",
              vf.CHARTS[2]: "(μ, log σ)", vf.CHARTS[3]: "natural parameters"}
AXIS_TEXT = {"mu": "mean μ", "sigma^2": "variance σ²", "sigma": "standard deviation σ", "log sigma": "log σ",
             "log sigma^2": "variance σ² (log scale)", "eta_1 = mu / sigma^2": "η₁ = μ / σ²",
             "eta_2 = -1 / (2 sigma^2)": "η₂ = −1 / (2σ²)"}
LECTURE_AXIS_TEXT = {"variance σ² (log scale)": "σ² (log scale)", "standard deviation σ": "σ"}
CRAB, GAUSS = "horseshoe crabs (Poisson, Tan Fig. 1)", "Gaussian N(m, 1/a)"
PAPER_STARTS = "0,0.1; 0.5,0.02; 2,0.01"
GAUSS_STARTS = "-1.5,2.25; 2.5,0.0125"  # Kumar et al. toy T1: (m0, sigma0) = (-1.5, 1.5)
M_TARGET = 1.0  # Kumar et al. toy T1: N(1, 1/a)


def _rule_label(option: str) -> str:
    code = RULES.get(option, option)
    return RULE_TEXT.get(code, plots.label(code))


@ui.cache_resource()
def _target(kind, a):
    if kind == CRAB:
        return horseshoe_crab_toy()
    return gaussian_target(np.array([M_TARGET]), precision=np.array([[a]]), name=f"N({M_TARGET:g}, 1/{a:g})")


@ui.cache_data(max_entries=2048)
def _path(tkey, rule, mu0, s20, schedule, step):
    tr = vf.run_1d(RULES[rule], _target(*tkey), mu0, s20, step, schedule=schedule, rel_tol=1e-7, n_steps=1000)
    rmin = float(np.min(tr.step_sizes)) if tr.n_steps else np.nan
    return tr.mean[:, 0], tr.cov[:, 0, 0], tr.status, tr.n_steps, rmin


@ui.cache_data(max_entries=128)
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


def _log_ticks(lo, hi, decades=False):
    """Tick positions (natural log of the variance) and labels (the variance) of a log-variance axis
    (``decades``: only powers of 10, for the large text of lecture mode)."""
    vals = []
    for k in range(math.floor(lo / math.log(10)) - 1, math.ceil(hi / math.log(10)) + 1):
        for f in (1, 2, 5):
            v = math.log(f * 10.0**k)
            if lo <= v <= hi:
                vals.append(v)
    if len(vals) > 9 or decades:
        vals = [v for v in vals if abs(math.exp(v) / 10 ** round(math.log10(math.exp(v))) - 1) < 1e-9]
    return vals, [f"{math.exp(v):.3g}" for v in vals]


# ------------------------------------------------------------------------------------------ controls
ctl, area = ui.columns(1.2, 3.3)
with ctl:
    tname = ui.radio("target", "tgt", [CRAB, GAUSS], CRAB)
    crab = tname == CRAB
    a = 4.0 if crab else ui.log_slider("target precision a (target N(1, 1/a))", "a", 0.04, 400.0, 4.0)
    charts = [vf.CHARTS[4]] + list(vf.CHARTS[:4])
    chart = ui.select("coordinates", "chart", charts, vf.CHARTS[4], format_func=CHART_TEXT.get,
                      help="Tan's Fig. 1 draws the fields in (μ, σ²).")
    starts_key = "starts" if crab else "gstarts"
    starts_text = ui.text("starting points 'mu,sigma^2; ...' (or click an arrow)", starts_key,
                          PAPER_STARTS if crab else GAUSS_STARTS)
    start_msg = st.session_state.pop("_vf_start_msg", None)
    if start_msg:
        st.info(start_msg)
    n_arrows = ui.slider("arrows per axis", "na", 8, 30, 17)
    normalise = ui.toggle("arrows: direction only", "norm", True)
    live_on = ui.toggle("step by step (Play, Step, change ρ mid-run)", "live", False)
    live_kw = {"on_change": ui_live.redraw("vf")} if live_on else {}

    def _step_controls():
        """The step-size rule and ρ (in the step-by-step view beside the figure: the lecturer moves ρ)."""
        rule = ui.radio("step-size rule", "rule", ["backtracking (Tan Sec. 4.1)", "fixed"], "backtracking (Tan Sec. 4.1)")
        if rule == "fixed":
            return rule, ui.log_slider("fixed step size ρ", "rho", 1e-6, 1.0, 0.01, **live_kw), "rho"
        if live_on:  # the first rung of the ladder, which the step-by-step view lets you change mid-run
            return rule, ui.log_slider("first step size tried ρ₀", "rho0", 1e-6, 1.0, 1.0, **live_kw), "rho0"
        return rule, 1.0, None

    if live_on:
        schedule, step, step_key = _step_controls()
    with ui.more("New starts" if live_on else "Step sizes and new starts"):
        if not live_on:
            schedule, step, step_key = _step_controls()
        ui.number("new start: mean μ", "nmu", -50.0, 50.0, 1.0, 0.1)
        ui.number("new start: variance σ²", "ns2", 1e-6, 1e3, 0.05, 0.01, format="%.4g")
        st.button("add this start", key="add_start", on_click=_add_start, args=(starts_key,))
        st.button("reset starts", key="reset_starts", on_click=st.session_state.__setitem__,
                  args=(starts_key, PAPER_STARTS if crab else GAUSS_STARTS))

def _field_pair(arrows, fine, L_opt, optimum, start_xy, starts, paths, normalise, xlabel, ylabel, height, bends,
                bend_symbol, chart, box, lecture, plain=False):
    """The two fields side by side with every path (and the star where a live run's step size changed);
    ``plain``: what of it the paths change, as plain data (vilab_ui.live.Live.show)."""
    fig = fplots.field_pair_figure(
        arrows["xs"], arrows["ys"], [(arrows["Ex"], arrows["Ey"]), (arrows["Nx"], arrows["Ny"])],
        titles=("Euclidean gradient field", "natural gradient field"), paths=paths,
        objective=fine["L"], objective_xy=(fine["xs"], fine["ys"]), objective_max=L_opt, optimum=optimum,
        starts=start_xy, start_labels=[f"start {k + 1}: ({m:g}, {s:g})" for k, (m, s) in enumerate(starts)],
        normalise=normalise, xlabel=xlabel, ylabel=ylabel, clickable=True, height=height, bends=list(bends),
        bend_symbol=bend_symbol, plain=plain)
    if plain:
        return fig
    if chart == vf.CHARTS[4]:
        tv, tt = _log_ticks(*box[1], decades=lecture)
        fig.update_yaxes(tickvals=tv, ticktext=tt)
    if lecture:  # projector: large text on a short plot; the notice names the optimum ○
        fig.update_yaxes(title_text=LECTURE_AXIS_TEXT.get(ylabel, ylabel), row=1, col=1)
        fig.update_traces(showlegend=False, selector=dict(name="optimum"))
        fig.update_layout(legend=dict(xref="container", x=0.0, font_size=plots.LECTURE_FONT_PX - 2))  # the floor: 2 rows
    return fig


with area:
    fig_slot, rules_slot, table_slot = st.container(), st.container(), st.container()
with rules_slot:  # under the figure, where the chips have room; made first: the figure needs it
    rules = ui.multiselect("update rules: κ = (μ, σ²), ξ = (μ, 1/σ²), λ = natural parameters, C = σ, T = 1/σ",
                           "rules", list(RULES), TABLE2, format_func=_rule_label)

tkey = (tname, float(a))
sched = "backtracking" if schedule.startswith("backtracking") else "constant"

with fig_slot, ui.guard("vector fields"):
    target = _target(*tkey)
    starts = starts_ui.parse_starts(starts_text, max_starts=None)
    if len(starts) > starts_ui.MAX_STARTS:
        with ctl:
            st.info(f"Only the first {starts_ui.MAX_STARTS} of the {len(starts)} starting points are drawn; remove some "
                    "from the text box to draw the others.")
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
    if chart != vf.CHARTS[3]:  # room for the numbered start shapes at the edges (the natural chart has its own)
        (x0, x1), (y0, y1) = box
        xr, yr = x1 - x0, y1 - y0
        lo = y0 - 0.04 * yr if chart in (vf.CHARTS[2], vf.CHARTS[4]) else max(y0 - 0.04 * yr, 0.5 * y0)
        box = ((x0 - 0.03 * xr, x1 + 0.03 * xr), (lo, y1 + 0.1 * yr))
    arrows = _grid(tkey, chart, box, int(n_arrows))
    fine = _grid(tkey, chart, box, 44)
    ox, oy = (float(v) for v in vf.to_chart(opt[0], opt[1], chart))
    L_opt = float(vf.elbo_grads_1d(target, opt[0], opt[1])[0])

    xlabel, ylabel = (AXIS_TEXT.get(t, t) for t in vf.chart_labels(chart))
    start_xy = np.array([vf.to_chart(m, s, chart) for m, s in starts], float)

    def _fields(path_fn, bends=(), lv=None):
        """Draw both fields with every (start, rule) path from ``path_fn(rule, mu0, s20)`` -> (means,
        variances, status, iterations, smallest step size), as the live figure of ``lv`` when given; (table rows,
        counts per rule)."""
        eu_paths, na_paths, rows, counts = {}, {}, [], {}
        for k, (mu0, s20) in enumerate(starts):
            row = {"start": f"({mu0:g}, {s20:g})", "on the plot": f"{k + 1} {fplots.start_symbol(k)[1]}"}
            for r in rules:
                pm, ps, status, its, rmin = path_fn(r, mu0, s20)
                with np.errstate(invalid="ignore", divide="ignore"):
                    px, py = vf.to_chart(pm, np.where(ps > 0, ps, np.nan), chart)
                code = RULES[r]
                (eu_paths if code == "gd-mv" else na_paths)[f"start {k + 1} {row['start']}"
                                                           + ("" if code == "gd-mv" else f" ({_rule_label(r)})")] = \
                    (px, py, status, code)
                row[_rule_label(r)] = (f"{its} ({rmin:.0e})" if status in ("converged", "stalled")
                                       else f"{its}: {ui.status_text(status)}")
                counts.setdefault(code, []).append((its, status, rmin))
            rows.append(row)
        args = (arrows, fine, L_opt, (ox, oy), start_xy, list(starts), (eu_paths, na_paths), normalise, xlabel, ylabel,
                (345 if ui.lecture() else 360) if live_on else 400,  # live: the buttons' row sits above
                tuple(bends), "ρ₀" if step_key == "rho0" else "ρ", chart, box, ui.lecture())
        (ui.show if lv is None else lv.show)(ui.recipe(_field_pair, *args), key="fields", main=True,
                                             on_select=lambda: _add_click("fields", starts_key, chart),
                                             selection_mode="points")
        return rows, counts

    if live_on:
        lv = ui_live.Live("vf", {step_key: step_key}, n_max=1000, bounds=(1e-6, 1.0))

        def _draw(lv):
            runs = {}

            def live_path(r, mu0, s20):
                code = RULES[r]
                tr = lv.follow(("vector fields", tkey, code, mu0, s20, sched), {"rho": step_key},
                               lambda n, sett, pre, pre_sett: run_1d_schedule(
                                   code, target, mu0, s20, sett["rho"], n, sched, prefix=pre,
                                   prefix_changes=pre_sett["rho"] if pre_sett else None))
                runs[f"{_rule_label(r)} from ({mu0:g}, {s20:g})"] = tr
                rmin = float(np.min(tr.step_sizes)) if tr.n_steps else np.nan
                return tr.mean[:, 0], tr.cov[:, 0, 0], tr.status, tr.n_steps, rmin

            _fields(live_path, lv.bends(step_key), lv)
            return runs

        lv.player(_draw, per_tick=lambda it: max(1, it // 10))
        ui.notice("Step (key N), Step ×10 (Shift+N) or Play (P) the runs from every start; move "
                  + ("ρ" if step_key == "rho" else "ρ₀, the first step size the backtracking rule tries,")
                  + " while paused or playing and every path goes on from where it is with the new value (a star "
                  "marks the iterate). Natural-gradient paths reach the optimum ○ in a few steps and stop there "
                  "(no step size increases the ELBO any more); Euclidean ones creep. Reset (0) starts again.")
    else:
        rows, counts = _fields(lambda r, mu0, s20: _path(tkey, r, mu0, s20, sched, float(step)))

        # what to notice, with this view's numbers
        def _summary(code):
            got = counts.get(code, [])
            ok = [c for c in got if c[1] in ("converged", "stalled")]  # stalled: stationary to machine precision
            if not ok:
                return None
            its = [c[0] for c in ok]
            return min(its), max(its), min(c[2] for c in ok)

        eu = _summary("gd-mv")
        nat = {c: _summary(c) for c in counts if c != "gd-mv" and _summary(c) is not None}
        n_div = sum(str(c[1]).startswith("diverged") for v in counts.values() for c in v)
        parts = []
        if eu is not None and nat:
            best = min(nat, key=lambda c: nat[c][1])
            rng = lambda t: f"{t[0]}" if t[0] == t[1] else f"{t[0]} to {t[1]}"  # noqa: E731
            parts.append(f"Euclidean ascent needs {rng(eu)} steps, with step sizes down to {eu[2]:.0e}; "
                         f"the fastest natural rule here, {_rule_label(next(o for o in rules if RULES[o] == best))}, needs "
                         f"{rng(nat[best])}.")
        parts.append("Near σ² = 0 the Euclidean gradient's σ² component holds the entropy term 1/(2σ²), which explodes, "
                     "so only tiny steps keep σ² positive and the ELBO rising: the left paths zigzag. The natural gradient "
                     "multiplies it by 2σ⁴ "
                     "(the inverse Fisher information), which cancels the blow-up, so the right arrows point at the "
                     "optimum ○ and large steps are safe.")
        if chart == vf.CHARTS[3]:
            parts.append("In natural parameters the natural field of a Gaussian target points straight at the optimum.")
        if n_div:
            parts.append(f"{n_div} run(s) diverged (a fixed step too large for the curvature): the label marks where "
                         "they left the Gaussians; hover it for the reason.")
        ui.notice(" ".join(parts))

        with table_slot:
            st.markdown("**Iterations to convergence (smallest step size used)**, stopping when "
                        "|L_new − L_old| < 10⁻⁷ |L_new|" + (" (Tan 2025, Table 2, with the default settings)." if crab else "."))
            ui.table(pd.DataFrame(rows).set_index("start"))

with area:
    @ui.explain()
    def equations():
        st.markdown(
            "The ELBO L(μ, σ²) of q = N(μ, σ²) is drawn as contours of its gap to the optimum (log scale, darker = "
            "closer). **Euclidean gradient ascent** follows (∂L/∂μ, ∂L/∂σ²). Its σ² component contains the entropy term "
            "1/(2σ²), which is huge near σ² = 0: a step large enough to move μ overshoots σ² below zero, so the "
            "backtracking rule (Tan 2025, Sec. 4.1: try ρ = 1, 0.1, 0.01, … until q stays a Gaussian and L increases) "
            "accepts only tiny steps and the path zigzags. **Natural-gradient ascent** premultiplies by the inverse "
            "Fisher information F⁻¹:")
        st.latex(r"\tilde\nabla L=F^{-1}\nabla L=\big(\sigma^2\,\partial_\mu L,\ 2\sigma^4\,\partial_{\sigma^2}L\big)")
        st.caption("Tan (2025), Table 1, in κ = (μ, σ²).")
        st.markdown(
            "This is one tangent vector, the same whatever coordinates describe q: κ = (μ, σ²), ξ = (μ, 1/σ²), the "
            "natural parameters λ = (μ/σ², −1/(2σ²)) or the Cholesky factors C = σ and T = 1/σ. The update rules differ "
            "only in which coordinates take the straight step, hence the different iteration counts in the table. "
            "In natural parameters, the natural-gradient flow lines on a Gaussian target are straight lines to the "
            "optimum. Arrows show the direction only (equal sizes) unless 'arrows: direction only' is off, then their size "
            "grows with the gradient's length; the coordinates menu redraws the same picture in other charts: "
            "(μ, log σ²) spreads the small variances over the plot, (μ, σ²) is Tan's Fig. 1, and the natural "
            "parameters are (μ/σ², −1/(2σ²)). Each starting point has its own numbered "
            "shape, listed in the table's 'on the plot' column; click an arrow in either plot to start there.")
