"""Figures of the 2-D trajectories page (Kumar et al. 2025 Fig. 1; Tan 2025 Tables 3-4).

Pure data in, ``go.Figure`` out. Runs are :class:`vilab.core.Trace` objects (or anything with
``mean`` (n+1, 2), ``cov`` (n+1, 2, 2), ``objective`` (n+1,), ``status``); a diverged run is drawn
up to its failure and labelled with the reason.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import plotly.graph_objects as go

from . import color, ellipse, style

__all__ = ["paths_figure", "objective_figure", "animation_figure", "sweep_figure", "frame_indices", "plot_window",
           "log_density_grid"]


def _label(name: str, tr) -> str:
    st = getattr(tr, "status", "")
    return f"{name} ({st})" if isinstance(st, str) and st.startswith("diverged") else name


def _check_2d(tr, name):
    m = np.asarray(tr.mean)
    if m.ndim != 2 or m.shape[1] != 2:
        raise ValueError(f"Run {name!r}: paths can only be drawn for 2-D targets; its mean has shape {m.shape}.")
    return m


def _base(contour, bounds, truth, n_std):
    fig = go.Figure()
    if contour is not None:
        fig.add_trace(contour)
    if truth is not None:
        x, y = ellipse(truth[0], truth[1], n_std)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name="target", line=dict(color=color("true"), dash="dash", width=2)))
        fig.add_trace(go.Scatter(x=[truth[0][0]], y=[truth[0][1]], mode="markers", name="target mean", showlegend=False,
                                 marker=dict(symbol="x", size=10, color=color("true"))))
    if bounds is not None:
        fig.update_xaxes(range=list(bounds[0]))
        fig.update_yaxes(range=list(bounds[1]))
    fig.update_xaxes(title="theta_1")
    fig.update_yaxes(title="theta_2")
    return fig


def paths_figure(traces: Mapping[str, object], contour: go.Contour | None = None, every: int = 10,
                 n_std: float = 1.0, truth: tuple | None = None, bounds=None, title: str | None = None,
                 max_ellipses: int = 30, height: int = 520) -> go.Figure:
    """Mean paths over the target's contours with n_std covariance ellipses every ``every`` steps.

    ``truth`` = (mean, cov) of the exact posterior draws it dashed. At most ``max_ellipses``
    ellipses per run are drawn (``every`` is raised if needed). A diverged run's legend entry
    carries its status and its last point is annotated.
    """
    if every < 1:
        raise ValueError(f"Draw ellipses every k >= 1 steps; got k = {every}.")
    fig = _base(contour, bounds, truth, n_std)
    for i, (name, tr) in enumerate(traces.items()):
        m = _check_2d(tr, name)
        cov = np.asarray(tr.cov)
        c = color(name, i)
        label = _label(name, tr)
        fig.add_trace(go.Scatter(x=m[:, 0], y=m[:, 1], mode="lines+markers", name=label, legendgroup=name,
                                 line=dict(color=c, width=2), marker=dict(size=4, color=c),
                                 customdata=np.arange(len(m)),
                                 hovertemplate=f"{name}<br>step %{{customdata}}<br>(%{{x:.4g}}, %{{y:.4g}})<extra></extra>"))
        k = max(every, int(np.ceil(len(m) / max_ellipses)))
        idx = list(range(0, len(m), k))
        if idx[-1] != len(m) - 1:
            idx.append(len(m) - 1)
        ex, ey = [], []
        for j in idx:
            x, y = ellipse(m[j], cov[j], n_std, n=60)
            ex += [*x, np.nan]
            ey += [*y, np.nan]
        fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", showlegend=False, legendgroup=name,
                                 line=dict(color=c, width=1), opacity=0.6, hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=m[:1, 0], y=m[:1, 1], mode="markers", showlegend=False, legendgroup=name,
                                 marker=dict(symbol="square", size=9, color=c), hoverinfo="skip"))
        if getattr(tr, "diverged", False) or str(getattr(tr, "status", "")).startswith("diverged"):
            fig.add_annotation(x=m[-1, 0], y=m[-1, 1], text=f"{name}: {tr.status}", showarrow=True, arrowhead=2,
                               font=dict(color=c, size=11), bgcolor="rgba(255,255,255,0.85)")
    return style(fig, title=title, height=height)


def objective_figure(traces: Mapping[str, object], optimum: float | None = None, log_x: bool = False,
                     title: str | None = None, ylabel: str | None = None, height: int = 400) -> go.Figure:
    """Objective against iteration on a log y axis (log x optional).

    With ``optimum`` the gap objective - optimum is drawn (KL is drawn as is). Non-positive
    values cannot sit on a log axis: they are dropped (a run that reached the optimum to round-off
    simply ends). Iterations start at 1 on a log x axis (iteration k drawn at k + 1).
    """
    fig = go.Figure()
    name0 = None
    for i, (name, tr) in enumerate(traces.items()):
        obj = np.asarray(tr.objective, float)
        name0 = name0 or getattr(tr, "objective_name", "objective")
        y = obj - optimum if optimum is not None else obj
        k = np.arange(len(y)) + (1 if log_x else 0)
        ok = np.isfinite(y) & (y > 0)
        fig.add_trace(go.Scatter(x=k[ok], y=y[ok], mode="lines", name=_label(name, tr),
                                 line=dict(color=color(name, i), width=2)))
    ylabel = ylabel or (f"{name0} - optimum" if optimum is not None else (name0 or "objective"))
    fig.update_yaxes(type="log", title=ylabel, exponentformat="power")
    fig.update_xaxes(type="log" if log_x else "linear", title="iteration" + (" + 1" if log_x else ""))
    return style(fig, title=title, height=height)


def frame_indices(n_rows: int, n_frames: int) -> np.ndarray:
    """At most ``n_frames`` iterate indices from 0 to n_rows - 1, log-ish spaced (dense early,
    where the paths move most), always including the first and last."""
    if n_rows < 1:
        raise ValueError("A run needs at least its starting point.")
    if n_frames < 2 or n_rows <= n_frames:
        return np.arange(n_rows)
    lin = np.linspace(0, n_rows - 1, n_frames // 2)
    log = np.geomspace(1, n_rows, n_frames - n_frames // 2) - 1
    return np.unique(np.round(np.concatenate([lin, log, [0, n_rows - 1]])).astype(int))


def animation_figure(traces: Mapping[str, object], contour: go.Contour | None = None, n_frames: int = 60,
                     n_std: float = 1.0, truth: tuple | None = None, bounds=None, title: str | None = None,
                     frame_ms: int = 80, height: int = 520) -> go.Figure:
    """Animated mean (path so far) and n_std ellipse of each run, with a play button and a slider.

    Frames are taken at common iteration indices (a run that stopped earlier stays at its last
    iterate). Built with Plotly frames: no server round trip while playing.
    """
    names = list(traces)
    means = {n: _check_2d(traces[n], n) for n in names}
    covs = {n: np.asarray(traces[n].cov) for n in names}
    n_rows = max(len(m) for m in means.values())
    ks = frame_indices(n_rows, n_frames)
    fig = _base(contour, bounds, truth, n_std)
    first_dynamic = len(fig.data)

    def dynamic(k):
        out = []
        for i, n in enumerate(names):
            m, c = means[n], covs[n]
            j = min(k, len(m) - 1)
            ex, ey = ellipse(m[j], c[j], n_std, n=60)
            col = color(n, i)
            out.append(go.Scatter(x=m[:j + 1, 0], y=m[:j + 1, 1], mode="lines", line=dict(color=col, width=2),
                                  name=_label(n, traces[n]), legendgroup=n))
            out.append(go.Scatter(x=ex, y=ey, mode="lines", line=dict(color=col, width=2), fill="toself",
                                  opacity=0.35, showlegend=False, legendgroup=n, hoverinfo="skip"))
            out.append(go.Scatter(x=m[j:j + 1, 0], y=m[j:j + 1, 1], mode="markers", showlegend=False, legendgroup=n,
                                  marker=dict(size=10, color=col, line=dict(width=1, color="black"))))
        return out

    for tr in dynamic(0):
        fig.add_trace(tr)
    idx = list(range(first_dynamic, len(fig.data)))
    fig.frames = [go.Frame(data=dynamic(int(k)), traces=idx, name=str(int(k))) for k in ks]
    play = dict(label="Play", method="animate",
                args=[None, dict(frame=dict(duration=frame_ms, redraw=False), fromcurrent=True,
                                 transition=dict(duration=0))])
    pause = dict(label="Pause", method="animate",
                 args=[[None], dict(frame=dict(duration=0, redraw=False), mode="immediate")])
    fig.update_layout(
        updatemenus=[dict(type="buttons", direction="left", x=0.0, y=-0.12, xanchor="left", yanchor="top",
                          buttons=[play, pause], showactive=False)],
        sliders=[dict(active=0, x=0.15, y=-0.08, len=0.85, currentvalue=dict(prefix="iteration "),
                      steps=[dict(label=str(int(k)), method="animate",
                                  args=[[str(int(k))], dict(frame=dict(duration=0, redraw=False), mode="immediate")])
                             for k in ks])])
    style(fig, title=title, height=height)
    fig.update_layout(margin=dict(b=110))
    return fig


def sweep_figure(step_sizes, iterations: Mapping[str, np.ndarray], statuses: Mapping[str, list],
                 thresholds: Mapping[str, float | None] | None = None, max_steps: int | None = None,
                 title: str | None = None, height: int = 430) -> go.Figure:
    """Iterations to tolerance against step size (log-log), one line per method.

    ``iterations[m][i]`` is the count at ``step_sizes[i]`` with status ``statuses[m][i]``:
    converged runs are joined by a line, runs that hit the step limit are open circles at
    ``max_steps``, diverged runs are crosses at the top of the plot. ``thresholds[m]`` draws a
    dotted vertical reference line (the theoretical stability limit).
    """
    steps = np.asarray(step_sizes, float)
    fig = go.Figure()
    top = max_steps or max((np.nanmax(np.asarray(v, float)) for v in iterations.values() if len(v)), default=1)
    for i, (name, its) in enumerate(iterations.items()):
        its = np.asarray(its, float)
        sts = list(statuses[name])
        if len(its) != len(steps) or len(sts) != len(steps):
            raise ValueError(f"Method {name!r}: need one iteration count and one status per step size.")
        c = color(name, i)
        conv = np.array([s == "converged" for s in sts])
        div = np.array([str(s).startswith("diverged") for s in sts])
        maxed = ~conv & ~div
        y = np.where(conv, its, np.nan)
        fig.add_trace(go.Scatter(x=steps, y=y, mode="lines+markers", name=name, legendgroup=name,
                                 line=dict(color=c, width=2), marker=dict(size=7, color=c), connectgaps=False))
        if maxed.any():
            fig.add_trace(go.Scatter(x=steps[maxed], y=np.full(maxed.sum(), top), mode="markers", legendgroup=name,
                                     name=f"{name}: step limit", showlegend=False,
                                     marker=dict(symbol="circle-open", size=10, color=c),
                                     hovertemplate=f"{name}: no convergence within the step limit<extra></extra>"))
        if div.any():
            fig.add_trace(go.Scatter(x=steps[div], y=np.full(div.sum(), top * 1.6), mode="markers", legendgroup=name,
                                     name=f"{name}: diverged", showlegend=False,
                                     marker=dict(symbol="x", size=11, color=c),
                                     text=[sts[j] for j in np.flatnonzero(div)],
                                     hovertemplate=f"{name}: %{{text}}<extra></extra>"))
    # one dotted line per distinct limit, labelled with every method that shares it
    limits: dict = {}
    for i, name in enumerate(iterations):
        thr = (thresholds or {}).get(name)
        if thr is not None and np.isfinite(thr) and thr > 0:
            limits.setdefault(round(float(thr), 12), []).append((name, color(name, i)))
    for thr, owners in limits.items():
        c = owners[0][1]
        fig.add_vline(x=thr, line=dict(color=c, dash="dot", width=2),
                      annotation=dict(text=", ".join(n for n, _ in owners) + " limit", font=dict(color=c, size=10)),
                      annotation_position="top")
    fig.update_xaxes(type="log", title="step size", exponentformat="power")
    fig.update_yaxes(type="log", title="iterations to tolerance")
    return style(fig, title=title, height=height)


# ---------------------------------------------------------------------------------------------
# Plot windows of 2-D targets (Trajectories and Flows pages)


def plot_window(bounds, points, pad: float = 0.08, max_abs: float = 1e3):
    """The box ((x0, x1), (y0, y1)) covering the target's window ``bounds`` (or None) and the finite
    ``points`` (n, 2) (starts, iterates; points beyond ``max_abs`` are ignored), padded by ``pad`` of
    its size on each side (plus 0.5 when there is no target window)."""
    pts = np.asarray(points, float).reshape(-1, 2)
    pts = pts[np.all(np.isfinite(pts), axis=1) & np.all(np.abs(pts) < max_abs, axis=1)]
    if bounds is None and pts.size == 0:
        raise ValueError("A plot window needs the target's window or at least one finite point.")
    lo = np.min(pts, 0) if pts.size else np.full(2, np.inf)
    hi = np.max(pts, 0) if pts.size else np.full(2, -np.inf)
    if bounds is not None:
        (b0, b1), (b2, b3) = bounds
        lo, hi = np.minimum(lo, [b0, b2]), np.maximum(hi, [b1, b3])
    margin = pad * (hi - lo) + (0.0 if bounds is not None else 0.5)
    return (float(lo[0] - margin[0]), float(hi[0] + margin[0])), (float(lo[1] - margin[1]), float(hi[1] + margin[1]))


def log_density_grid(target, bounds, n: int = 121):
    """log p on an n x n grid over ``bounds`` (one vmapped, jitted call): (values (n, n), xs, ys),
    rows = ys, as :func:`vilab.plots.density_contour` takes them."""
    if target.dim != 2:
        raise ValueError(f"Density contours need a 2-D target; {target.name!r} has dimension {target.dim}.")
    xs, ys = np.linspace(*bounds[0], int(n)), np.linspace(*bounds[1], int(n))
    X, Y = np.meshgrid(xs, ys)
    import jax.numpy as jnp

    return np.asarray(target.value_batch(jnp.asarray(np.stack([X.ravel(), Y.ravel()], 1)))).reshape(X.shape), xs, ys
