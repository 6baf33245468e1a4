"""Trajectories (2-D): Euclidean, Wasserstein and natural-gradient Gaussian VI side by side (Kumar et al. 2025 Fig. 1)."""

import numpy as np
import pandas as pd
import streamlit as st

import vilab_ui as ui
from vilab import plots
from vilab.theory import stability
from vilab.targets import tabular
from vilab.algorithms import algorithm, run
from vilab.core import as_key
from vilab.family.gaussian import CholCov
from vilab.plots import density_contour
from vilab.plots import trajectories as tplots
from vilab.targets import banana, rotated_gaussian_2d, student_t_2d
from vilab.targets.papers import kumar_t2, kumar_t3
from vilab_ui import live as ui_live
from vilab_ui.csv_data import CSV_CHOICE, FIT_CHUNK, coefficient_pair, csv_panel, fit_on_press

ui.page(
    "Trajectories",
    "Each method moves q = N(m, V) towards a 2-D posterior: the paths show the mean, the ellipses the "
    "covariance every k steps.",
)

METHODS = ["vn", "srvn", "gd-mc", "gd-mv", "bwgd", "fbgvi", "tan-1E", "tan-1N", "tan-2E", "tan-2N", "tan-2N-cor1",
           "lsk", "tan-1N-log", "svgd"]
DEFAULT_STEP = {"vn": 1.0, "srvn": 1.0, "gd-mc": 0.0237, "gd-mv": 0.00237, "bwgd": 0.0237, "fbgvi": 0.0237,
                "tan-1E": 0.0237, "tan-1N": 1.0, "tan-2E": 0.0133, "tan-2N": 1.0, "tan-2N-cor1": 1.0,
                "lsk": 1.0, "tan-1N-log": 1.0, "svgd": 0.00237}
STEP_HI = 10 ** 0.25  # 1.78: the 1/8-decade grid from 1e-4 then contains 1 exactly
TARGETS = ["Bayesian linear regression (T2)", "logistic regression (T3)", "correlated Gaussian", "banana", "Student-t",
           CSV_CHOICE]
# shown shorter than their URL values, so that a choice fits the control column
TARGET_TEXT = {TARGETS[0]: "linear regression (T2)"}
VIEWS = ["paths", "animation", "step-size sweep", "live"]
VIEW_TEXT = {"live": "step by step"}


@ui.cache_resource()
def _target(name, kappa, rho_t, df, mkey=None, _model=None):
    """A built-in target, or (mkey, _model) the posterior of the user's CSV data."""
    if _model is not None:
        return _model.target()
    if name.startswith("Bayesian linear") or name == CSV_CHOICE:
        return kumar_t2()
    if name.startswith("logistic"):
        return kumar_t3()
    if name == "correlated Gaussian":
        return rotated_gaussian_2d(kappa)
    if name == "banana":
        return banana(0.5, 2.0)
    return student_t_2d(df, rho=rho_t)


def _exact_ok(tgt):
    return bool(tgt.quadratic) or tgt.glm is not None


def _options(tgt, grads, n_samples, tol):
    """run() options: the gradient mode, and the page's tolerance as a KL tolerance on Gaussian targets,
    else as a relative ELBO tolerance (exact gradients only: noisy ELBOs never settle)."""
    opts = {"grads": grads}
    if grads != "exact":
        opts["n_samples"] = int(n_samples)
    if tgt.quadratic and tgt.cov is not None:
        opts["kl_tol"] = tol
    elif grads == "exact":
        opts["rel_tol"] = tol
    return opts


def _start(m0, c0):
    """q's start: mean m0 (2 or d numbers), C0 = c0 I."""
    return CholCov(np.asarray(m0, float), c0 * np.eye(len(m0)))


@ui.cache_data(max_entries=256)
def _run(tkey, method, rho, grads, n_samples, seed, m0, c0, n_steps, tol, _model=None):
    tgt = _target(*tkey, _model=_model)
    opts = _options(tgt, grads, n_samples, tol)
    return run(method, tgt, _start(m0, c0), int(n_steps), float(rho), key=as_key(int(seed)), **opts)


@ui.cache_resource(ttl=None)  # the store bounds itself
def _fits() -> ui.SharedStore:
    """Finished fits on users' data, for every session of this server (64 runs, 6 hours each)."""
    return ui.SharedStore(maxsize=64, ttl_s=6 * 3600)


def _fit(tkey, method, rho, grads, n_samples, seed, m0, c0, n_steps, tol, model, progress=None, max_time=None):
    """A run on the user's data: a finished one from :func:`_fits`, else (given ``max_time``) run now within that
    budget, reporting to ``progress``, and kept if it finished; None when not run yet."""
    key = (tkey, method, float(rho), grads, int(n_samples), int(seed), m0, float(c0), int(n_steps), float(tol))
    hit = _fits().get(key)
    if hit is not None or max_time is None:
        return hit
    tgt = _target(*tkey, _model=model)
    tr = run(method, tgt, _start(m0, c0), int(n_steps), float(rho), key=as_key(int(seed)), progress=progress,
             max_time=max_time, chunk_size=FIT_CHUNK, **_options(tgt, grads, n_samples, tol))
    if tr.status != "max_time":  # a run cut short by the budget is shown, not kept
        _fits()[key] = tr
    return tr


def _live_build(tkey, method, grads, n_samples, seed, m0, c0, rho, model=None):
    """(algorithm, key, start state) of a step-by-step run: no stopping rule, the steps are the user's."""
    tgt = _target(*tkey, _model=model)
    opts = {"grads": grads} if grads == "exact" else {"grads": grads, "n_samples": int(n_samples)}
    alg = algorithm(method, tgt, **opts)
    key = as_key(int(seed))
    return alg, key, alg.init(key, _start(m0, c0), rho=float(rho), target=tgt)


@ui.cache_data(max_entries=64)
def _contour(tkey, bounds):
    return tplots.log_density_grid(_target(*tkey), bounds)


@ui.cache_data(max_entries=32)
def _csv_contour(tkey, pair, at, bounds, _model):
    """log p(y, θ) of the user's model on a grid over ``bounds`` in the coefficients ``pair``, the others
    held at ``at`` (the whole posterior when the model has two coefficients)."""
    n = 121 if _model.n * 121**2 <= 5e7 else max(41, int(np.sqrt(5e7 / _model.n)))
    xs, ys = np.linspace(*bounds[0], n), np.linspace(*bounds[1], n)
    return tabular.slice_log_joint(_model, pair, np.asarray(at), xs, ys), xs, ys


@ui.cache_data(max_entries=32)
def _limits(tkey, m0, c0, _model=None):
    return stability.step_size_limits(_target(*tkey, _model=_model), _start(m0, c0))


@ui.cache_data(max_entries=64)
def _sweep(tkey, method, grads, n_samples, seed, m0, c0, n_steps, tol, _model=None):
    tgt = _target(*tkey, _model=_model)
    opts = _options(tgt, grads, n_samples, tol)
    steps = np.logspace(-4, 0.25, 18)  # quarter decades, 1 included
    its, sts, _ = stability.step_size_sweep(method, tgt, _start(m0, c0), steps, int(n_steps),
                                            key=as_key(int(seed)), **opts)
    return steps, its, sts


def _paths_figure(traces, contour, every, truth, bounds, axis_names=None, height=430, bends=None, plain=False):
    """The paths view's figure (and the live view's, with ``bends``: see vilab_ui.live.Live.show for ``plain``);
    ``axis_names``: the two coefficients shown of your data's model."""
    fig = tplots.paths_figure(traces, contour, every=every, truth=truth, bounds=bounds, height=height, bends=bends,
                              plain=plain)
    if axis_names is not None and not plain:
        fig.update_xaxes(title=f"θ: {axis_names[0]}")
        fig.update_yaxes(title=f"θ: {axis_names[1]}")
    return fig


def _names(ms):
    return ", ".join(plots.label(m) for m in ms[:-1]) + (" and " if len(ms) > 1 else "") + plots.label(ms[-1])


# ------------------------------------------------------------------------------------------ controls
ctl, area = ui.columns(1.1, 2.6)
with area:  # the figure, then the methods (their chips need the width), then the rest
    fig_slot, methods_slot, rest = st.container(), st.container(), st.container()
with methods_slot:
    methods = ui.multiselect("methods (each keeps its colour, dash and marker on every page)", "m", METHODS,
                             ["vn", "srvn", "gd-mc", "bwgd"], format_func=plots.label)
with ctl:
    tname = ui.select("target", "tgt", TARGETS, TARGETS[0], format_func=lambda t: TARGET_TEXT.get(t, t))
    kappa = ui.log_slider("condition number", "kappa", 1.0, 1000.0, 30.0) if tname == "correlated Gaussian" else 30.0
    rho_t = ui.slider("Student-t correlation", "trho", -0.95, 0.95, 0.5, 0.05) if tname == "Student-t" else 0.5
    df = ui.log_slider("Student-t degrees of freedom", "df", 1.0, 100.0, 5.0) if tname == "Student-t" else 5.0
    view = ui.radio("view", "view", VIEWS, "paths", horizontal=True, format_func=lambda v: VIEW_TEXT.get(v, v))
    st.markdown("**Step sizes ρ**")
    # in the step-by-step view a moved step size redraws only the live figure (the run goes on with it)
    live_kw = {"on_change": ui_live.redraw("tr")} if view == "live" else {}
    rhos = {m: ui.log_slider(f"{plots.label(m)}: step size", f"s_{m}", 1e-4, STEP_HI, DEFAULT_STEP[m],
                             points_per_decade=8, **live_kw) for m in methods}
    c0 = ui.slider("start scale c₀ (C₀ = c₀ I)", "c0", 0.05, 5.0, 0.2, 0.05)
    csv, pair = None, (0, 1)
    if tname == CSV_CHOICE:
        with st.expander("Your CSV file", expanded=True):
            csv = csv_panel("csv_upload_tr", "the linear regression (T2)")
            if csv is not None:
                pair = coefficient_pair(csv)

tkey = (tname, float(kappa), float(rho_t), float(df), csv.key if csv else None)
model = csv.model if csv else None
target = None
with fig_slot, ui.guard("target"):
    target = _target(*tkey, _model=model)
if target is None:
    st.stop()
exact_ok = _exact_ok(target)
gauss = bool(target.quadratic and target.cov is not None)

settings = {m: [rhos[m], None] for m in methods}
with ctl:
    with ui.more("Start, gradients and stopping"):
        every = ui.slider("ellipse every k steps (at most 30 per run)", "k", 1, 200, 10)
        if model is None:
            m1 = ui.number("start mean m₁", "m1", -10.0, 10.0, -2.0, 0.5)
            m2 = ui.number("start mean m₂", "m2", -10.0, 10.0, 2.5, 0.5)
        else:  # your data: from the prior mean 0 unless moved (the shown coefficients' start)
            m1 = ui.number("start mean, x-axis coefficient", "cm1", -10.0, 10.0, 0.0, 0.5)
            m2 = ui.number("start mean, y-axis coefficient", "cm2", -10.0, 10.0, 0.0, 0.5)
        n_steps = ui.select("maximum steps", "n", [100, 300, 1000, 3000, 10000], 1000)
        tol = ui.log_slider("tolerance (KL for Gaussian targets, relative ELBO change otherwise)", "tol", 1e-12, 1e-3,
                            1e-8 if gauss else 1e-7)
        n_samples = ui.number("samples per step (stochastic gradients)", "ns", 1, 1000, 10,
                              help="Draws per step for 'first' / 'second' order gradients; the sidebar's random seed "
                                   "fixes them.")
        modes = ["exact", "first", "second"] if exact_ok else ["first", "second"]
        for m in methods:
            settings[m][1] = ui.select(f"{plots.label(m)}: gradients", f"g_{m}", modes, modes[0],
                                       help="exact: closed-form expectations; first / second: Monte Carlo estimates "
                                            "from gradients / Hessians of log p at sampled points.")
        n_frames = ui.slider("animation frames", "frames", 10, 150, 60)
settings = {m: tuple(v) for m, v in settings.items()}

m0 = (float(m1), float(m2))
if model is not None and model.d > 2:  # the start's other coefficients are 0
    full = np.zeros(model.d)
    full[list(pair)] = m0
    m0_full = tuple(float(v) for v in full)
else:
    m0_full = m0 if pair == (0, 1) else (m0[1], m0[0])
seed = ui.seed()

with fig_slot, ui.guard("runs"):
    if not exact_ok:
        st.caption(f"{target.name} has no closed-form expectations: gradients are Monte Carlo estimates "
                   f"({int(n_samples)} draws per step) and runs stop at the step limit.")
    if not methods:
        st.info("Choose at least one method.")
        st.stop()
    # the finished runs (the step-by-step view needs them only to frame a target without a window)
    need_full = view != "live" or model is not None or target.bounds is None
    sweep_steps = np.logspace(-4, 0.25, 18)  # the step-size sweep's quarter decades, 1 included
    if model is not None:  # your data: fitted when Fit is pressed, within a time budget (the CNN lab's Train)
        sweep = view == "step-size sweep"
        jobs = {(m, float(r)): f"{plots.label(m)}" + (f", step size {r:.3g}" if sweep else "")
                for m in methods for r in (sweep_steps if sweep else [settings[m][0]])}

        def _fit_job(job, progress=None, max_time=None):
            m, r = job
            return _fit(tkey, m, r, settings[m][1], int(n_samples), seed, m0_full, float(c0), int(n_steps),
                        float(tol), model, progress, max_time)

        fitted, missing = fit_on_press("tr", jobs, _fit_job)
        traces = {m: fitted[(m, float(settings[m][0]))] for m in methods} if not sweep else {}
        traces = {m: t for m, t in traces.items() if t is not None}
        if view != "live" and not sweep and not traces:
            st.stop()
    else:
        traces = {m: _run(tkey, m, settings[m][0], settings[m][1], int(n_samples), seed, m0_full, float(c0),
                          int(n_steps), float(tol), _model=model) for m in methods} if need_full else {}
    full_traces = traces
    if model is not None:  # the two coefficients shown: paths and marginal covariances
        traces = {m: tabular.project_trace(t, pair) for m, t in full_traces.items()}
    # the target's window, widened to show the start (and, without a window, the paths)
    pts = [m0] if target.bounds is not None else np.concatenate([t.mean for t in traces.values()] + [np.array([m0])])
    bounds = tplots.plot_window(target.bounds, pts)
    if model is None:
        vals, xs, ys = _contour(tkey, bounds)
    else:
        ref = next((m for m, t in full_traces.items() if not t.diverged), next(iter(full_traces), None))
        last = np.asarray(full_traces[ref].mean)[-1] if ref is not None else np.zeros(model.d)
        at = tuple(float(v) for v in (last if np.all(np.isfinite(last)) else np.zeros(model.d)))
        vals, xs, ys = _csv_contour(tkey, pair, at, bounds, model)
        names = csv.names
        with rest:
            st.caption(ui.plain(
                f"Your data: the coefficients of {names[pair[0]]} (x axis) and {names[pair[1]]} (y axis)"
                + (f" of the {model.d}; the runs fit all {model.d} (the others start at 0), and the grey contours are "
                   "log p on the slice where the others are held at "
                   + (f"{plots.label(ref)}'s final mean" if ref is not None else "0 (the start; Fit draws them at a "
                      "fit's final mean)") + ", not the "
                   "marginal posterior." if model.d > 2 else ": grey contours of the exact posterior.")))
    contour = density_contour(vals, xs, ys)
    truth = (target.mean, target.cov) if gauss else None
    lim = None
    if view == "live":
        pass
    elif exact_ok and model is None:
        lim = _limits(tkey, m0, float(c0))
    elif exact_ok:  # your data: the stability limits are drawn where they can be found
        try:
            lim = _limits(tkey, m0_full, float(c0), _model=model)
        except ValueError:
            lim = None
    lam_max = lim["lam_max"] if lim else None
    same = tplots.coinciding({m: np.asarray(t.mean) for m, t in traces.items()})
    why_same = ""
    if same:
        g0 = same[0]
        why_same = f" {plots.label(g0[0])} lies under {_names(g0[1:])} (wider line, larger markers)"
        why_same += (": on a Gaussian target the mean's gradient g = A(m − m*) does not involve the covariance, and "
                     "each of them updates the mean by m ← m − ρg, so at equal ρ their means agree at every step; only "
                     "their ellipses differ." if gauss else ": their mean paths coincide.")

    if view == "paths":
        ui.show(ui.recipe(_paths_figure, traces, contour, int(every), truth, bounds,
                          None if model is None else (csv.names[pair[0]], csv.names[pair[1]])), key="paths", main=True)
        counts = ", ".join(f"{plots.label(m)} {t.n_steps}" + ("" if t.status == "converged" else f" ({ui.status_text(t.status)})")
                           for m, t in traces.items())
        lesson = ("Natural-gradient methods precondition by the covariance and take steps of size about 1 however "
                  "stretched the posterior; Euclidean and Wasserstein ones need ρ below about 1/λ_max")
        lesson += (f" = {1 / lam_max:.3g}" if lam_max else "") + " and then crawl along the flat direction."
        ui.notice(f"{target.name}: mean paths from the start □, 1-sd ellipses every {int(every)} steps. Steps to tolerance: {counts}. "
                  f"{lesson}{why_same}")
        for m, tr in traces.items():
            ui.report_status(tr, plots.label(m))
        with rest:
            obj_name = next(iter(traces.values())).objective_name
            opt = None
            if not gauss:
                opt = min(float(np.nanmin(t.objective)) for t in traces.values()) - 1e-9
            st.markdown(f"**{obj_name if gauss else obj_name + ' minus the best value seen'}, against the iteration**")
            ui.show(ui.recipe(tplots.objective_figure, traces, optimum=opt, log_x=True, height=360), key="objective")
            rows = [{"method": plots.label(m), "step size": f"{settings[m][0]:.3g}", "gradients": settings[m][1],
                     "iterations": tr.n_steps, "status": ui.status_text(tr.status),
                     "final " + tr.objective_name: f"{float(tr.objective[-1]):.4g}"}
                    for m, tr in traces.items()]
            ui.table(pd.DataFrame(rows), hide_index=True)
    elif view == "animation":
        ui.show(ui.recipe(tplots.animation_figure, traces, contour, n_frames=int(n_frames), truth=truth, bounds=bounds,
                          height=450), key="anim", main=True)
        ui.notice("Press Play, or drag the iteration slider. Each ellipse is q's 1-sd region at that iteration, "
                  "drawn in its method's colour and dash; the long-dashed black ellipse (Gaussian targets) is the "
                  "posterior. Natural-gradient ellipses take the "
                  "posterior's shape within a few steps, Euclidean and Wasserstein ones slowly." + why_same)
        for m, tr in traces.items():
            ui.report_status(tr, plots.label(m))
    elif view == "live":
        lv = ui_live.Live("tr", {m: f"s_{m}" for m in methods}, n_max=int(n_steps), bounds=(1e-4, STEP_HI))
        ns = int(n_samples)

        def _draw(lv):
            runs = {m: lv.run(("trajectories", tkey, m, settings[m][1], ns, seed, m0_full, float(c0)),
                              lambda m=m: _live_build(tkey, m, settings[m][1], ns, seed, m0_full, float(c0),
                                                      rhos[m], model),
                              {"rho": m}) for m in methods}
            shown = runs if model is None else {m: tabular.project_trace(t, pair) for m, t in runs.items()}
            # the buttons take a row above: a lower figure keeps it on the first screen in lecture mode
            lv.show(ui.recipe(_paths_figure, shown, contour, int(every), truth, bounds,
                              None if model is None else (csv.names[pair[0]], csv.names[pair[1]]),
                              height=330 if ui.lecture() else 400, bends={m: lv.bends(m) for m in methods}),
                    key="live", main=True)
            return {plots.label(m): t for m, t in runs.items()}

        lv.player(_draw, per_tick=lambda it: max(1, it // 10))
        ui.notice("Drive the runs: Step (key N) takes one iteration, Step ×10 (Shift+N) ten, Play (P) runs on "
                  "until Pause. Move a step size while paused or playing: the run goes on from where it is with "
                  "the new ρ, and the star marks the iterate where it changed. Reset (0) starts again from the "
                  "current step sizes. The link in the address bar opens this very step, bends included.")
    else:
        its, sts = {}, {}
        steps = None
        for m in methods:
            if model is None:
                steps, its[m], sts[m] = _sweep(tkey, m, settings[m][1], int(n_samples), seed, m0_full, float(c0),
                                               int(n_steps), float(tol), _model=model)
            else:  # your data: the fits of the step sizes one by one (Fit), drawn once all are done
                if missing:
                    st.stop()
                runs = [fitted[(m, float(r))] for r in sweep_steps]
                steps, its[m], sts[m] = sweep_steps, np.array([t.n_steps for t in runs]), [t.status for t in runs]
        thr = None
        if lim is not None:  # linearised at the optimum: the target's precision, or V*^-1 at the Gaussian fixed point
            thr = {m: lim["limits"].get(m) for m in methods}
        ui.show(ui.recipe(tplots.sweep_figure, steps, its, sts, thresholds=thr, max_steps=int(n_steps), height=430), key="sweep",
                main=True)
        keys = {m: [(st_, int(n)) if st_ == "converged" else (str(st_)[:8], 0) for n, st_ in zip(its[m], sts[m])]
                for m in methods}
        agree = []  # methods with the same outcome (count, or divergence) wherever either of them did not time out

        def _same(a, b):
            told = [(x, y) for x, y in zip(keys[a], keys[b]) if not (x[0] == y[0] == "max_step")]
            eq = sum(x == y for x, y in told)
            return eq, len(told)

        for i, a in enumerate(methods):
            grp = [a] + [b for b in methods[i + 1:] if _same(a, b)[0] >= max(2, 0.5 * _same(a, b)[1])]
            if len(grp) > 1 and not any(set(grp) <= set(g) for g, *_ in agree):
                agree.append((grp, *min((_same(a, b) for b in grp[1:]), key=lambda t: t[0])))
        best = {m: steps[int(np.nanargmin(np.where([s == "converged" for s in sts[m]], its[m], np.inf)))]
                for m in methods if any(s == "converged" for s in sts[m])}
        text = (f"Iterations to tolerance at {len(steps)} step sizes (the rows on top: step limit reached, diverged). ")
        if best:
            text += "Fastest step size: " + ", ".join(f"{plots.label(m)} {v:.3g}" for m, v in best.items()) + ". "
        text += ("Euclidean and Wasserstein methods stop converging near their dotted stability limit (about 1/λ_max"
                 + (f" = {1 / lam_max:.3g}" if lam_max else "") + "); VN converges in one step at ρ = 1.")
        if agree:
            grp, n_eq, n_told = agree[0]
            text += (f" {_names(grp)} have the same outcome at {n_eq} of the {n_told} step sizes where they converge "
                     "or diverge (stacked markers, larger ones underneath)")
            text += (": on a Gaussian target they move the mean alike, and the mean is the slowest part." if gauss
                     else ".")
        ui.notice(text)

with rest:
    @ui.explain()
    def equations():
        st.markdown(
            "All methods minimise the same objective, the negative ELBO of q = N(m, V), V = CCᵀ, from the same start "
            "(m₀, C₀ = c₀I). They differ in the geometry of their steps. **Natural-gradient** methods precondition by "
            "the Fisher information, which for the mean is the covariance V: VN (Kumar et al. 2025, Eq. 7) updates the "
            "precision S = V⁻¹ and takes a Newton-like step, exact in one step on a Gaussian target at ρ = 1; SR-VN "
            "(Eq. 17) does the same in the Cholesky factor C; Tan's rules are natural-gradient steps in C or T = C⁻ᵀ.")
        st.latex(r"\text{VN: } S_{t+1}=(1-\rho)S_t+\rho H_t,\quad m_{t+1}=m_t-\rho S_{t+1}^{-1}g_t")
        st.latex(r"\text{SR-VN: } C_{t+1}=C_t-\rho\,C_t\,\mathrm{tril}[C_t^\top H_tC_t-I],")
        st.latex(r"m_{t+1}=m_t-\rho\,C_tC_t^\top g_t")
        st.markdown(
            "Here g = E_q[∇ℓ] and H = E_q[∇²ℓ] are the expected gradient and Hessian of the negative log posterior ℓ. "
            "**Euclidean** methods (GD in (m, C), GD in (m, V), Tan's Euclidean rules) and **Wasserstein** methods "
            "(BW-GD, FB-GVI) all move the mean by m ← m − ρg. On a Gaussian target with precision A, g = A(m − m*) "
            "shrinks the error along each eigenvector of A by the factor 1 − ρλ per step: stable only for ρ below about "
            "1/λ_max, and then slow along the flat direction (λ_min), which is why they need hundreds of steps where "
            "VN needs one. The stability limits drawn in the step-size sweep come from linearising each update at the "
            "optimum: 1/λ_max for GD in (m, C) and BW-GD, min(2/λ_max, 4/λ_max²) for GD in (m, V), 1/λ_max for FB-GVI "
            "(beyond it FB-GVI stalls at a wrong covariance rather than blowing up), 1 for VN, and a limit that depends "
            "on the start for SR-VN. On targets that are not Gaussian, A is the curvature at the Gaussian fixed point, "
            "V*⁻¹ = E_q*[∇²ℓ] (Kumar et al. Eq. 22). λ_max and λ_min are the largest and smallest eigenvalues of A.")
        st.markdown(
            "Three more rules to compare: **VN kept PD** (Lin, Schmidt & Khan 2020) adds ρ²/2 G S⁻¹G, G = H − S, to VN's "
            "precision step, which keeps S positive definite for every step size and every (even indefinite, single-"
            "draw) Hessian; **natural, C with log diagonal** is Tan's natural step in C with log Cᵢᵢ as the coordinate "
            "(the paper's printed step has a typo: C, not C′, inside), so the diagonal stays positive; **Gaussian SVGD** "
            "is Stein variational gradient descent with the kernel xᵀy + 1 and expectations in place of particles "
            "(Kumar et al. App. G; the paper prints no update, this is our reconstruction): it needs small steps and "
            "converges the slowest.")
