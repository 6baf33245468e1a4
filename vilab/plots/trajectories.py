"""Figures of the 2-D trajectories page (Kumar et al. 2025 Fig. 1; Tan 2025 Tables 3-4).

Pure data in, ``go.Figure`` out (or, for the live figure of a Play, ``plain=True``: its traces as dicts, no graph
objects). Runs are :class:`vilab.core.Trace` objects (or anything with
``mean`` (n+1, 2), ``cov`` (n+1, 2, 2), ``objective`` (n+1,), ``status``); a diverged run is drawn
up to its failure and labelled with the reason.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import plotly.graph_objects as go

from . import color, ellipse, ellipse_outlines, fast, label, line, marker, style

__all__ = ["paths_figure", "add_bends", "bend_marks", "objective_figure", "animation_figure", "sweep_figure", "frame_indices", "plot_window",
           "log_density_grid", "coinciding"]


def _label(name: str, tr) -> str:
    """The legend entry of a run: its readable label, "(diverged)" when it diverged (the reason is long: the
    page's warning and the hover give it)."""
    st = getattr(tr, "status", "")
    lab = label(name)
    return f"{lab} (diverged)" if isinstance(st, str) and st.startswith("diverged") else lab


def _ln(name, width, c):
    """The method's line (colour and dash) at ``width``, coloured ``c`` (its colour, or a palette colour
    for an unnamed run)."""
    return {**line(name, width=width), "color": c}


def _mk(name, size, c, **kw):
    """The method's marker (symbol) at ``size``, coloured ``c``."""
    return {**marker(name, size=size, **kw), "color": c}


def _check_2d(tr, name):
    return _check_mean(tr.mean, name)


def _check_mean(mean, name):
    m = np.asarray(mean)
    if m.ndim != 2 or m.shape[1] != 2:
        raise ValueError(f"Run {name!r}: paths can only be drawn for 2-D targets; its mean has shape {m.shape}.")
    return m


def coinciding(series: Mapping[str, np.ndarray], rtol: float = 1e-9, atol: float = 1e-12) -> list[list[str]]:
    """Groups (of two or more names, in the mapping's order) whose arrays are equal to round-off:
    runs whose mean paths lie on top of each other, or sweeps with the same counts."""
    names = list(series)
    groups: list[list[str]] = []
    used = set()
    for i, a in enumerate(names):
        if a in used:
            continue
        xa = np.asarray(series[a], float)
        g = [a]
        for b in names[i + 1:]:
            xb = np.asarray(series[b], float)
            if b not in used and xa.shape == xb.shape and np.allclose(xa, xb, rtol=rtol, atol=atol, equal_nan=True):
                g.append(b)
        if len(g) > 1:
            groups.append(g)
            used.update(g)
    return groups


def _widths(names, groups, base: float = 2.5, extra: float = 3.0) -> dict:
    """Line width per run: within a group of coinciding runs the first drawn is the widest, so every
    member shows around the ones drawn on top of it (their dash and colour differ too)."""
    w = {n: base for n in names}
    for g in groups:
        for j, n in enumerate(g):
            w[n] = base + extra * (len(g) - 1 - j)
    return w


def _base_traces(contour, truth, n_std) -> list:
    """The target's traces under the runs: its contours (as given: a graph object or a dict) and, for a Gaussian
    target (``truth``), its n_std ellipse and mean, as dicts."""
    out = [] if contour is None else [contour]
    if truth is not None:
        x, y = ellipse(truth[0], truth[1], n_std)
        out.append(dict(type="scatter", x=x, y=y, mode="lines", name="target",
                        line={**line("target", width=2), "dash": "longdash"}, hoverinfo="skip"))
        out.append(dict(type="scatter", x=[truth[0][0]], y=[truth[0][1]], mode="markers", name="target mean",
                        showlegend=False, marker=marker("target", size=12), hoverinfo="skip"))
    return out


def _base(contour, bounds, truth, n_std, traces=None):
    """A figure of the target (:func:`_base_traces`, or ``traces``) in the window ``bounds``."""
    fig = fast(go.Figure())  # its graph-object traces are not validated twice
    for t in _base_traces(contour, truth, n_std) if traces is None else traces:
        fig.add_trace(t)
    if bounds is not None:
        fig.update_xaxes(range=list(bounds[0]))
        fig.update_yaxes(range=list(bounds[1]))
    fig.update_xaxes(title="θ₁")
    fig.update_yaxes(title="θ₂")
    return fig


def paths_figure(traces: Mapping[str, object], contour: go.Contour | None = None, every: int = 10,
                 n_std: float = 1.0, truth: tuple | None = None, bounds=None, title: str | None = None,
                 max_ellipses: int = 30, height: int = 520, bends: Mapping[str, list] | None = None,
                 bend_symbol: str = "ρ", plain: bool = False):
    """Mean paths over the target's contours with n_std covariance ellipses every ``every`` steps.

    Runs are keyed by method (code or label): each is drawn in its look (vilab.plots.look: colour,
    dash, marker symbol at the ellipse points) under its readable label. Runs whose mean paths
    coincide (on a Gaussian target GD in (m, C), BW-GD and FB-GVI move the mean alike) stay visible:
    the first drawn is the widest line. ``truth`` = (mean, cov) of the exact posterior draws it
    long-dashed. At most ``max_ellipses`` ellipses per run are drawn (``every`` is raised if
    needed). A diverged run's legend entry carries its status and its last point is annotated.
    ``bends`` = {name: [(t, value), ...]}: where a live run's step size changed, marked as :func:`add_bends`
    marks them (named by ``bend_symbol``).

    ``plain=True``: instead of the figure, what of it the runs change, as plain data (dicts and arrays, no graph
    objects: a Play draws one for every frame, vilab_ui.live): ``{"data": [every trace as a dict, in the
    figure's order], "layout": {"annotations": [...]}}``.
    """
    if every < 1:
        raise ValueError(f"Draw ellipses every k >= 1 steps; got k = {every}.")
    data = _base_traces(contour, truth, n_std)
    notes = []
    means = {name: _check_2d(tr, name) for name, tr in traces.items()}
    widths = _widths(list(traces), coinciding(means))
    for i, (name, tr) in enumerate(traces.items()):
        m = means[name]
        cov = np.asarray(tr.cov)
        c = color(name, i)
        lab = _label(name, tr)
        k = max(every, int(np.ceil(len(m) / max_ellipses)))
        idx = list(range(0, len(m), k))
        if idx[-1] != len(m) - 1:
            idx.append(len(m) - 1)
        ex, ey = ellipse_outlines(m[idx], cov[idx], n_std, n=40)
        data.append(dict(type="scatter", x=ex, y=ey, mode="lines", showlegend=False, legendgroup=name,
                         line=_ln(name, 1.2, c), opacity=0.7, hoverinfo="skip"))
        # the path (its legend entry shows the method's line and marker), and the method's marker at the ellipse
        # centres only, as a trace of its own: a marker per iterate, even of size 0, is a node the browser
        # draws on every redraw (maxdisplayed=1 keeps the path's own markers to one, of size 0)
        size = 7 + widths[name]
        data.append(dict(type="scatter", x=m[:, 0], y=m[:, 1], mode="lines+markers", name=lab, legendgroup=name,
                         line=_ln(name, widths[name], c),
                         marker=dict(_mk(name, 0, c, line=dict(width=1, color="white")), maxdisplayed=1),
                         customdata=np.arange(len(m)),
                         hovertemplate=f"{label(name)}<br>step %{{customdata}}<br>(%{{x:.4g}}, %{{y:.4g}})<extra></extra>"))
        data.append(dict(type="scatter", x=m[idx, 0], y=m[idx, 1], mode="markers", name=f"{lab}: ellipse centres",
                         legendgroup=name, showlegend=False,
                         marker=_mk(name, size, c, line=dict(width=1, color="white")), customdata=np.asarray(idx),
                         hovertemplate=f"{label(name)}<br>step %{{customdata}}<br>(%{{x:.4g}}, %{{y:.4g}})<extra></extra>"))
        if getattr(tr, "diverged", False) or str(getattr(tr, "status", "")).startswith("diverged"):
            notes.append(dict(x=m[-1, 0], y=m[-1, 1], text=f"{label(name)}: diverged", hovertext=str(tr.status),
                              showarrow=True, arrowhead=2, font=dict(color=c), bgcolor="rgba(255,255,255,0.85)"))
    if means:
        m0 = next(iter(means.values()))[0]
        data.append(dict(type="scatter", x=[m0[0]], y=[m0[1]], mode="markers", name="start", showlegend=False,
                         marker=dict(symbol="square", size=11, color="white", line=dict(width=2, color="black")),
                         hovertemplate="start (%{x:.4g}, %{y:.4g})<extra></extra>"))
    if bends:
        stars, more = bend_marks({name: tr.mean for name, tr in traces.items()}, bends, bend_symbol)
        data += stars
        notes += more
    if plain:
        return {"data": [t if isinstance(t, dict) else t.to_plotly_json() for t in data],
                "layout": {"annotations": notes}}
    fig = _base(contour, bounds, truth, n_std, traces=data)
    for a in notes:
        fig.add_annotation(**a)
    style(fig, title=title, height=height)
    fig.update_layout(legend_itemsizing="constant")  # legend symbols at one size (the markers grow with overlaps)
    return fig


def add_bends(fig: go.Figure, traces: Mapping[str, object], bends: Mapping[str, list], symbol: str = "ρ") -> go.Figure:
    """Mark where a live run's step size changed: for each run, at its iterate ``t`` of every change
    ``(t, value)`` in ``bends[name]``, a star in the method's colour labelled with the new value (the steps
    after ``t`` use it; vilab.core.live). Changes the run has not reached (it stopped before) are skipped."""
    stars, notes = bend_marks({name: tr.mean for name, tr in traces.items()}, bends, symbol)
    for t in stars:
        fig.add_trace(t)
    for a in notes:
        fig.add_annotation(**a)
    return fig


def bend_marks(means: Mapping[str, object], bends: Mapping[str, list], symbol: str = "ρ") -> tuple[list, list]:
    """The stars and value boxes of :func:`add_bends` as plain data: (trace dicts, annotation dicts), for the
    runs' mean paths ``means`` = {name: (n + 1, 2)}."""
    stars, notes = [], []
    for i, (name, mean) in enumerate(means.items()):
        pts = [(int(t), float(v)) for t, v in bends.get(name, []) if 0 <= int(t) < len(np.asarray(mean))]
        if not pts:
            continue
        m = _check_mean(mean, name)
        c = color(name, i)
        ts = [t for t, _ in pts]
        stars.append(dict(
            type="scatter", x=m[ts, 0], y=m[ts, 1], mode="markers", name=f"{label(name)}: {symbol} changed",
            legendgroup=name, showlegend=False,
            marker=dict(symbol="star", size=16, color=c, line=dict(width=1, color="black")),
            text=[f"{symbol} = {v:.3g}" for _, v in pts], customdata=np.array(pts),
            hovertemplate=f"{label(name)}: {symbol} = %{{customdata[1]:.3g}} after step %{{customdata[0]}}<extra></extra>"))
        for j, (t, v) in enumerate(pts):  # the new value in a box beside the star, readable over the paths
            notes.append(dict(x=m[t, 0], y=m[t, 1], text=f"{symbol} = {v:.3g}", showarrow=True, arrowhead=0,
                              ax=40, ay=-28 - 22 * ((i + j) % 3), font=dict(color=c), bgcolor="rgba(255,255,255,0.9)",
                              bordercolor=c, borderpad=2))
    return stars, notes


def objective_figure(traces: Mapping[str, object], optimum: float | None = None, log_x: bool = False,
                     title: str | None = None, ylabel: str | None = None, height: int = 400) -> go.Figure:
    """Objective against iteration on a log y axis (log x optional), each run in its method's look.

    With ``optimum`` the gap objective - optimum is drawn (KL is drawn as is). Non-positive
    values cannot sit on a log axis: they are dropped (a run that reached the optimum to round-off
    simply ends). Iterations start at 1 on a log x axis (iteration k drawn at k + 1). Coinciding
    curves stay visible (the first drawn is the widest).
    """
    fig = go.Figure()
    name0 = None
    objs = {n: np.asarray(tr.objective, float) for n, tr in traces.items()}
    widths = _widths(list(traces), coinciding(objs, rtol=1e-6))
    for i, (name, tr) in enumerate(traces.items()):
        obj = objs[name]
        name0 = name0 or getattr(tr, "objective_name", "objective")
        y = obj - optimum if optimum is not None else obj
        k = np.arange(len(y)) + (1 if log_x else 0)
        ok = np.isfinite(y) & (y > 0)
        fig.add_trace(go.Scatter(x=k[ok], y=y[ok], mode="lines", name=_label(name, tr),
                                 line=_ln(name, widths[name], color(name, i))))
    ylabel = ylabel or (f"{name0} − optimum" if optimum is not None else (name0 or "objective"))
    fig.update_yaxes(type="log", title=ylabel, exponentformat="e")  # no superscripts: small on a projector
    pos = np.concatenate([np.asarray(t.y, float) for t in fig.data] or [np.ones(1)])
    pos = pos[np.isfinite(pos) & (pos > 0)]
    if pos.size and np.log10(pos.max() / pos.min()) < 6:  # short ranges: whole decades only (no 70%-size "2", "5")
        fig.update_yaxes(dtick=1)
    if log_x:
        fig.update_xaxes(dtick=1)
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
    iterate). Built with Plotly frames: no server round trip while playing. Frames only replace the
    runs' traces; every frame is redrawn in full, so the target's contours stay. Each run keeps its
    method's look: an unfilled ellipse in its colour and dash, its marker at the current mean.
    """
    names = list(traces)
    means = {n: _check_2d(traces[n], n) for n in names}
    covs = {n: np.asarray(traces[n].cov) for n in names}
    n_rows = max(len(m) for m in means.values())
    ks = frame_indices(n_rows, n_frames)
    widths = _widths(names, coinciding(means))
    fig = _base(contour, bounds, truth, n_std)
    first_dynamic = len(fig.data)

    def dynamic(k):
        out = []
        for i, n in enumerate(names):
            m, c = means[n], covs[n]
            j = min(k, len(m) - 1)
            ex, ey = ellipse(m[j], c[j], n_std, n=60)
            col = color(n, i)
            out.append(go.Scatter(x=m[:j + 1, 0], y=m[:j + 1, 1], mode="lines", line=_ln(n, widths[n], col),
                                  name=_label(n, traces[n]), legendgroup=n))
            out.append(go.Scatter(x=ex, y=ey, mode="lines", line=_ln(n, 2.5, col), showlegend=False,
                                  legendgroup=n, hoverinfo="skip"))
            out.append(go.Scatter(x=m[j:j + 1, 0], y=m[j:j + 1, 1], mode="markers", showlegend=False, legendgroup=n,
                                  marker=_mk(n, 9 + 2 * widths[n], col, line=dict(width=1.5, color="white")),
                                  hovertemplate=f"{label(n)}, step {j}<br>(%{{x:.4g}}, %{{y:.4g}})<extra></extra>"))
        return out

    for tr in dynamic(0):
        fig.add_trace(tr)
    idx = list(range(first_dynamic, len(fig.data)))
    fig.frames = [go.Frame(data=dynamic(int(k)), traces=idx, name=str(int(k))) for k in ks]
    play = dict(label="Play", method="animate",
                args=[None, dict(frame=dict(duration=frame_ms, redraw=True), fromcurrent=True,
                                 transition=dict(duration=0))])
    pause = dict(label="Pause", method="animate",
                 args=[[None], dict(frame=dict(duration=0, redraw=True), mode="immediate")])
    fig.update_layout(
        # under the axis at a fixed distance in px (pad), whatever the plot's height and the font sizes
        updatemenus=[dict(type="buttons", direction="left", x=0.0, y=0.0, xanchor="left", yanchor="top",
                          pad=dict(t=72), buttons=[play, pause], showactive=False)],
        sliders=[dict(active=0, x=0.32, y=0.0, yanchor="top", len=0.68, pad=dict(t=62),
                      currentvalue=dict(prefix="iteration "),
                      steps=[dict(label=str(int(k)), method="animate",
                                  args=[[str(int(k))], dict(frame=dict(duration=0, redraw=True), mode="immediate")])
                             for k in ks])])
    style(fig, title=title, height=height)
    fig.update_layout(margin=dict(b=150), legend_itemsizing="constant")
    return fig


def _ranks(keys: Mapping[str, list]) -> dict:
    """For each method and point, how many methods drawn later sit on the same point (same key):
    the marker of a method grows with it, so every method's marker shows around those on top."""
    names = list(keys)
    out = {}
    for i, n in enumerate(names):
        out[n] = np.array([sum(keys[o][j] == keys[n][j] for o in names[i + 1:]) for j in range(len(keys[n]))])
    return out


def sweep_figure(step_sizes, iterations: Mapping[str, np.ndarray], statuses: Mapping[str, list],
                 thresholds: Mapping[str, float | None] | None = None, max_steps: int | None = None,
                 title: str | None = None, height: int = 430) -> go.Figure:
    """Iterations to tolerance against step size (log-log), one line per method in its look.

    ``iterations[m][i]`` is the count at ``step_sizes[i]`` with status ``statuses[m][i]``:
    converged runs are joined by a line; runs that hit the step limit sit in a row at ``max_steps``
    ("step limit"), diverged runs in a row above it ("diverged"), each in its method's marker.
    Where several methods have the same count, the earlier-drawn markers are larger, so every
    method's marker shows. ``thresholds[m]`` draws a dotted vertical reference line (the
    theoretical stability limit), one per distinct value, labelled with the methods sharing it.
    """
    steps = np.asarray(step_sizes, float)
    fig = go.Figure()
    top = max_steps or max((np.nanmax(np.asarray(v, float)) for v in iterations.values() if len(v)), default=1)
    keys = {}
    for name, its in iterations.items():
        its = np.asarray(its, float)
        sts = list(statuses[name])
        if len(its) != len(steps) or len(sts) != len(steps):
            raise ValueError(f"Method {name!r}: need one iteration count and one status per step size.")
        keys[name] = [("c", float(n)) if s == "converged" else ("d" if str(s).startswith("diverged") else "m")
                      for n, s in zip(its, sts)]
    ranks = _ranks(keys)
    n_div = n_max = 0
    for i, (name, its) in enumerate(iterations.items()):
        its = np.asarray(its, float)
        sts = list(statuses[name])
        c = color(name, i)
        lab = label(name)
        conv = np.array([s == "converged" for s in sts])
        div = np.array([str(s).startswith("diverged") for s in sts])
        maxed = ~conv & ~div
        size = 8.0 + 4.0 * ranks[name]
        y = np.where(conv, its, np.nan)
        fig.add_trace(go.Scatter(x=steps, y=y, mode="lines+markers", name=lab, legendgroup=name,
                                 line=_ln(name, 2.5 + 1.5 * float(ranks[name][conv].max(initial=0) > 0), c),
                                 marker=_mk(name, size, c, line=dict(width=1, color="white")),
                                 connectgaps=False,
                                 hovertemplate=f"{lab}<br>step size %{{x:.3g}}: %{{y:.0f}} iterations<extra></extra>"))
        if maxed.any():
            n_max += 1
            fig.add_trace(go.Scatter(x=steps[maxed], y=np.full(maxed.sum(), top), mode="markers", legendgroup=name,
                                     name=f"{lab}: step limit", showlegend=False,
                                     marker=_mk(name, size[maxed], c, line=dict(width=1, color="white")),
                                     hovertemplate=f"{lab}, step size %{{x:.3g}}: no convergence within the step limit"
                                                   "<extra></extra>"))
        if div.any():
            n_div += 1
            fig.add_trace(go.Scatter(x=steps[div], y=np.full(div.sum(), top * 2.5), mode="markers", legendgroup=name,
                                     name=f"{lab}: diverged", showlegend=False,
                                     marker=_mk(name, size[div], c, line=dict(width=1, color="white")),
                                     text=[sts[j] for j in np.flatnonzero(div)],
                                     hovertemplate=f"{lab}, step size %{{x:.3g}}: %{{text}}<extra></extra>"))
    rows = [(top, "step limit", n_max), (top * 2.5, "diverged", n_div)]
    for yv, text, n in rows:
        if n:
            fig.add_annotation(x=1.0, xref="paper", xanchor="left", y=float(np.log10(yv)), yref="y", text=text,
                               showarrow=False, xshift=6)
    # one dotted line per distinct limit, labelled with every method that shares it, labels staggered
    limits: dict = {}
    for i, name in enumerate(iterations):
        thr = (thresholds or {}).get(name)
        if thr is not None and np.isfinite(thr) and thr > 0:
            limits.setdefault(round(float(thr), 12), []).append((name, color(name, i)))
    for k, (thr, owners) in enumerate(sorted(limits.items())):
        c = owners[0][1]
        fig.add_vline(x=thr, line=dict(color=c, dash="dot", width=2))
        fig.add_annotation(x=float(np.log10(thr)), xref="x", y=1.0 - 0.09 * k, yref="paper", yanchor="top",
                           xanchor="right", text=", ".join(label(n) for n, _ in owners) + " limit", showarrow=False,
                           font=dict(color=c), bgcolor="rgba(255,255,255,0.8)", xshift=-3)
    # one tick per decade: Plotly's in-between labels ("2", "5") are drawn at 70% size, too small on a projector
    fig.update_xaxes(type="log", title="step size ρ", exponentformat="e", dtick=1)
    fig.update_yaxes(type="log", title="iterations to tolerance", dtick=1)
    style(fig, title=title, height=height)
    fig.update_layout(margin=dict(r=95 if (n_div or n_max) else 40), legend_itemsizing="constant")
    return fig


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


def log_density_grid(target, bounds, n: int = 81):
    """log p on an n x n grid over ``bounds`` (one vmapped, jitted call): (values (n, n), xs, ys),
    rows = ys, as :func:`vilab.plots.density_contour` takes them."""
    if target.dim != 2:
        raise ValueError(f"Density contours need a 2-D target; {target.name!r} has dimension {target.dim}.")
    xs, ys = np.linspace(*bounds[0], int(n)), np.linspace(*bounds[1], int(n))
    X, Y = np.meshgrid(xs, ys)
    import jax.numpy as jnp

    return np.asarray(target.value_batch(jnp.asarray(np.stack([X.ravel(), Y.ravel()], 1)))).reshape(X.shape), xs, ys
