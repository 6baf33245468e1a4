"""Figures of the "Online learning" page (BONG, Jones, Chang & Murphy): pure data -> go.Figure."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import color, ellipse, label, line, look, marker, style

__all__ = ["posterior_ellipses", "variance_paths", "symlog", "symlog_ticks", "sci", "linear_stream", "conjugate_densities", "metric_curves", "runtime_bars", "sweep_plot",
           "drift_tracking", "batch_vs_online", "runtime_vs_size"]

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _pow10(k: int, sign: int = 1) -> str:
    """"10²", "−10⁻³", "1" ..."""
    txt = "1" if k == 0 else ("10" if k == 1 else f"10{str(k).translate(_SUPERSCRIPT)}")
    return ("−" if sign < 0 else "") + txt


def sci(x: float, digits: int = 3) -> str:
    """A number for a student: 3 significant digits, and powers of ten written out ("−8.04·10¹³")
    when it is very large or very small."""
    x = float(x)
    plain = f"{x:.{digits}g}"
    if not np.isfinite(x) or x == 0 or (1e-3 <= abs(x) < 1e5 and "e" not in plain):
        return plain.replace("-", "−")
    k = int(np.floor(np.log10(abs(x))))
    m = x / 10.0**k
    if round(abs(m), digits - 1) >= 10:
        m, k = m / 10, k + 1
    return f"{m:.{digits - 1}f}".replace("-", "−") + "·" + _pow10(k)


def symlog(y, c: float) -> np.ndarray:
    """The symmetric-log transform sign(y) log10(1 + |y|/c): linear within about ±c of 0, logarithmic
    beyond, so a sign change and values of very different sizes show on one axis."""
    y = np.asarray(y, float)
    return np.sign(y) * np.log10(1.0 + np.abs(y) / c)


def symlog_ticks(lo: float, hi: float, c: float, n: int = 7) -> tuple[list[float], list[str]]:
    """Tick positions (in symlog units) and labels (0, ±powers of 10 >= c) covering [lo, hi] (data units):
    about ``n`` ticks shared by the two sides in proportion to their length (each side keeps its extreme),
    never closer than 1/12 of the axis to each other, so labels never overlap."""
    k0 = int(np.floor(np.log10(c)))
    span = float(symlog(hi, c) - symlog(lo, c)) or 1.0
    vals, texts = [0.0], ["0"]
    for sign, bound in ((1, hi), (-1, -lo)):
        if bound <= c:
            continue
        ks = [k for k in range(k0, int(np.ceil(np.log10(bound))) + 1) if 10.0**k <= bound * 1.0001] or [k0]
        m = max(1, int(round((n - 1) * float(symlog(bound, c)) / span)))
        for k in ks[::-1][::int(np.ceil(len(ks) / m))]:
            y = float(symlog(sign * 10.0**k, c))
            if all(abs(y - v) >= span / 12 for v in vals):
                vals.append(y)
                texts.append(_pow10(k, sign))
    return vals, texts


def _add_ellipses(fig: go.Figure, beliefs: dict, theta_true, names: dict | None = None, **rc) -> None:
    order = sorted(beliefs, key=lambda k: k in ("kalman", "batch"))  # references last: on top
    for code in order:
        m, S = beliefs[code]
        lk = look(code)
        x, y = ellipse(np.asarray(m), np.asarray(S), 2.0)
        ok = np.all(np.isfinite(x))
        wide = code.startswith("bong") and not code.endswith("_mom")
        fig.add_trace(go.Scatter(x=x if ok else [None], y=y if ok else [None], mode="lines",
                                 name=(names or {}).get(code, lk.label),
                                 legendgroup=code, line=line(code, width=7 if wide else 2.5),
                                 opacity=0.5 if wide else 1.0), **rc)
        fig.add_trace(go.Scatter(x=[m[0]], y=[m[1]], mode="markers", marker=marker(code, size=9), showlegend=False,
                                 legendgroup=code, hovertemplate=f"{lk.label}: mean (%{{x:.3g}}, %{{y:.3g}})"
                                               + ("" if ok else " (not a covariance: no ellipse)") + "<extra></extra>"),
                      **rc)
    if theta_true is not None:
        fig.add_trace(go.Scatter(x=[theta_true[0]], y=[theta_true[1]], mode="markers", name="true θ",
                                 marker=dict(symbol="star", size=14, color="#F0E442", line=dict(color="#000000", width=1.5))),
                      **rc)


def posterior_ellipses(beliefs: dict, theta_true=None, title: str | None = None, height: int = 420) -> go.Figure:
    """2-sigma ellipses of 2-D Gaussians {method code: (mean, cov)}; an indefinite cov is listed, not drawn.

    Each method in its look (``kalman`` and ``batch`` are the references); a method whose ellipse lies
    under another's stays visible (the exact BONG line is drawn wide and pale, the references on top)."""
    fig = go.Figure()
    _add_ellipses(fig, beliefs, theta_true)
    fig.update_xaxes(title="θ₁")
    fig.update_yaxes(title="θ₂", scaleanchor="x", scaleratio=1)
    return style(fig, title, height=height)


def _add_eigenvalues(fig: go.Figure, t, paths: dict, floor: float, showlegend: bool = True, names: dict | None = None,
                     **rc) -> dict:
    """The symmetric-log eigenvalue traces; returns the y-axis settings (ticks, range)."""
    t = np.asarray(t)
    vals = {k: np.asarray(v, float) for k, v in paths.items()}
    pos = [abs(x) for v in vals.values() for x in v if np.isfinite(x) and x != 0]
    c = 10.0 ** np.floor(np.log10(min(pos))) if pos else 1.0
    fin = [x for v in vals.values() for x in v if np.isfinite(x)] or [0.0, 1.0]
    lo, hi = max(min(min(fin), 0.0), floor), max(max(fin), c)
    y0, y1 = float(symlog(lo, c)) - 0.5, float(symlog(hi, c)) + 0.5
    fig.add_hrect(y0=y0, y1=0.0, fillcolor="#D55E00", opacity=0.15, line_width=0, layer="below", **rc)
    if lo < 0:
        fig.add_annotation(x=0.03, y=0.03, xanchor="left", yanchor="bottom", text="below 0: not a covariance",
                           showarrow=False, xref=f"{_axis_ref(fig, 'x', rc)} domain",
                           yref=f"{_axis_ref(fig, 'y', rc)} domain")
    for code, v in vals.items():
        shown = np.where(np.isfinite(v), np.maximum(v, floor), np.nan)
        clipped = np.isfinite(v) & (v < floor)
        sym = np.where(clipped, "triangle-down", look(code).symbol)
        fig.add_trace(go.Scatter(x=t, y=symlog(shown, c), mode="lines+markers", name=(names or {}).get(code, label(code)),
                                 legendgroup=code,
                                 showlegend=showlegend, line=line(code, width=3),
                                 marker=dict(color=look(code).color, symbol=list(sym), size=9), customdata=v,
                                 hovertemplate=f"{label(code)}<br>t = %{{x}}: smallest eigenvalue %{{customdata:.3g}}"
                                               "<extra></extra>"), **rc)
    fig.add_hline(y=0.0, line=dict(color="#000000", width=1.5), **rc)
    tv, tt = symlog_ticks(lo, hi, c)
    return dict(tickvals=tv, ticktext=tt, range=[y0, y1])


def _axis_ref(fig: go.Figure, letter: str, rc: dict) -> str:
    """"x", "x2", ... of the subplot at rc (row, col); "x" for a figure without subplots."""
    if not rc:
        return letter
    sub = fig.get_subplot(rc["row"], rc["col"])
    name = (sub.xaxis if letter == "x" else sub.yaxis).plotly_name
    return name.replace("axis", "")


def variance_paths(t, paths: dict, title: str | None = None, height: int = 420, floor: float = -1e15) -> go.Figure:
    """Smallest eigenvalue of Σ_t against t, {method code: values}, on a symmetric-log axis.

    The exact path (BONG in natural parameters = Kalman) stays positive and shrinks like 1/t while the
    moment-form path can fall to -10^13 and beyond: a symmetric-log axis (:func:`symlog`, linear near 0,
    logarithmic beyond) shows both and the sign change. Values below ``floor`` are drawn at the floor
    (a downward triangle; the hover gives the value), non-finite ones are left out. The region below
    0 is shaded: there Σ_t is no covariance.
    """
    fig = go.Figure()
    yax = _add_eigenvalues(fig, t, paths, floor)
    fig.update_xaxes(title="observations t")
    fig.update_yaxes(title="smallest eigenvalue of Σ_t", **yax)
    return style(fig, title, height=height)


def linear_stream(beliefs: dict, t, eig_paths: dict, theta_true=None, t_now: int | None = None,
                  title: str | None = None, height: int = 430, floor: float = -1e15) -> go.Figure:
    """The linear-Gaussian stream in one figure, one legend: left, the 2σ ellipses of ``beliefs``
    {code: (mean, cov)} after t_now observations; right, the smallest eigenvalue of each method's Σ_t
    against t (``eig_paths`` {code: values}, symmetric-log axis, :func:`variance_paths`), with the
    current t marked. Legend names: :func:`short_labels` (the parts all the methods share are left out)."""
    bong = [c for c in dict.fromkeys(list(beliefs) + list(eig_paths)) if c.startswith(("bong", "blr", "bog", "bbb"))]
    names = short_labels(bong, keep_first=True)[0] if len(bong) > 1 else {}
    fig = make_subplots(rows=1, cols=2, column_widths=[0.46, 0.54], horizontal_spacing=0.14,
                        subplot_titles=[f"2σ ellipses after t = {t_now}" if t_now is not None else "2σ ellipses",
                                        "smallest eigenvalue of Σ_t"])
    _add_ellipses(fig, beliefs, theta_true, names=names, row=1, col=1)
    yax = _add_eigenvalues(fig, t, eig_paths, floor, showlegend=False, names=names, row=1, col=2)
    if t_now is not None:
        fig.add_vline(x=t_now, line=dict(color="#777777", dash="dot", width=1.5), row=1, col=2)
    fig.update_xaxes(title="θ₁", row=1, col=1)
    fig.update_yaxes(title="θ₂", scaleanchor="x", scaleratio=1, row=1, col=1)
    fig.update_xaxes(title="observations t", row=1, col=2)
    fig.update_yaxes(title="symmetric log scale", row=1, col=2, **yax)
    fig = style(fig, title, height=height)
    # the legend above the subplot titles
    fig.update_layout(margin_t=100 if title else 80, legend=dict(orientation="h", yanchor="bottom", y=1.09, x=0))
    return fig


def short_labels(codes, keep_first: bool = False) -> tuple[dict, str]:
    """Readable names of several methods without the parts they all share, and those shared parts.

    ``short_labels(["bong-lin-hess-dlr-10", "bog-lin-hess-dlr-10"])`` gives
    ({"bong-lin-hess-dlr-10": "BONG", "bog-lin-hess-dlr-10": "BOG"}, "linearised Hessian, diagonal + low rank
    (rank 10)"): a legend that fits beside the figure, the shared parts said once in the title."""
    codes = list(dict.fromkeys(codes))
    parts = {c: label(c).split(", ") for c in codes}
    common = [p for p in parts[codes[0]] if all(p in parts[c] for c in codes)] if len(codes) > 1 else []
    def name(c):
        rest = [p for p in parts[c] if p not in common]
        if keep_first and parts[c][0] in common:  # keep the algorithm's name (BONG, BLR ...) in front
            rest = [parts[c][0]] + rest
        return ", ".join(rest) or label(c)

    out = {c: name(c) for c in codes}
    return out, ", ".join(common)


def conjugate_densities(theta, densities: dict, title: str | None = None, height: int = 400) -> go.Figure:
    """Densities q(θ) on a grid: {"prior" | "BONG step" | "Bayes posterior": values}. The BONG step is
    drawn wide and pale, the exact Bayes posterior dashed on top of it (they coincide)."""
    fig = go.Figure()
    looks = {"prior": dict(color="#777777", dash="dot", width=2.5),
             "BONG step": dict(line(f"bong-lin-hess-fc", width=8), dash="solid"),
             "Bayes posterior": dict(color="#000000", dash="dash", width=2.5)}
    for lab, v in densities.items():
        fig.add_trace(go.Scatter(x=theta, y=v, mode="lines", name=lab, line=looks.get(lab, dict(color=color(lab))),
                                 opacity=0.55 if lab == "BONG step" else 1.0))
    fig.update_xaxes(title="θ")
    fig.update_yaxes(title="density")
    return style(fig, title, height=height)


def metric_curves(curves: dict, metric: str = "NLPD", title: str | None = None, log_y: bool = False,
                  codes: dict | None = None, notes: dict | None = None, height: int = 420) -> go.Figure:
    """{name: (t, values)} against the number of examples seen; ``codes`` {name: method code} draws each
    curve in its method's look (BONG grid codes: colour = algorithm, dash = family, marker = curvature)."""
    codes = codes or {}
    fig = go.Figure()
    for i, (lab, (t, v)) in enumerate(curves.items()):
        v = np.asarray(v, float)
        code = codes.get(lab, lab)
        note = (notes or {}).get(lab, "")
        fig.add_trace(go.Scatter(x=list(t), y=[None if not np.isfinite(a) else a for a in v], mode="lines+markers",
                                 name=lab, line=line(code, width=2.5), marker=marker(code, size=8),
                                 hovertemplate=f"{lab}{' (' + note + ')' if note else ''}<br>t = %{{x}}: "
                                               f"{metric} %{{y:.3g}}<extra></extra>"))
    fig.update_xaxes(title="examples seen t")
    fig.update_yaxes(title=metric, type="log" if log_y else "linear")
    fig = style(fig, title, height=height)
    if len(curves) > 3:  # many names: one column beside the plot (above it they would take its height)
        fig.update_layout(legend=dict(orientation="v", yanchor="top", y=1.0, x=1.02, xanchor="left"),
                          margin_t=55 if title else 24)
    return fig


def runtime_bars(labels, ms_per_step, title: str | None = None, codes=None) -> go.Figure:
    """Wall time per step (ms), one bar per method (Fig. 3 analogue); ``codes`` (one per bar) colour the bars."""
    codes = list(codes) if codes is not None else list(labels)
    fig = go.Figure(go.Bar(x=list(ms_per_step), y=list(labels), orientation="h",
                           marker_color=[color(c, i) for i, c in enumerate(codes)],
                           text=[f"{v:.3g} ms" for v in ms_per_step], textposition="auto"))
    fig.update_xaxes(title="ms per example", type="log", dtick=1)  # powers of 10 only (no small minor labels)
    fig.update_yaxes(autorange="reversed")
    return style(fig, title, height=max(220, 40 * len(labels) + 90))


def sweep_plot(series: dict, xlabel: str, baseline: tuple | None = None, title: str | None = None,
               ylabel: str = "final test NLPD (plug-in)", cap: float | None = None, codes: dict | None = None,
               open_markers=(), height: int = 400) -> go.Figure:
    """Final metric against a swept setting (log x): {name: (x, y, statuses)}.

    ``codes`` {name: method code} gives each series its method's look; names in ``open_markers`` get
    open markers and a solid line (e.g. the same method with more inner iterations). Diverged runs
    (status "diverged: ...") are drawn as crosses at the top of the panel; ``baseline = (label,
    value)`` is a horizontal line (bong's fixed alpha = 1).
    """
    codes = codes or {}
    fig = go.Figure()
    finite = [v for (_, ys, _) in series.values() for v in ys if v is not None and np.isfinite(v)]
    top = cap if cap is not None else (max(finite) * 1.1 if finite else 1.0)
    def pts(v):
        return [(float(x), None if y is None else round(float(y), 9)) for x, y in zip(v[0], v[1])]

    # a series whose points another one repeats exactly (BBB with I = 1 is BOG) is drawn wider, with
    # larger markers, under it: both stay visible
    under = {a for a in series for b in series if list(series).index(b) > list(series).index(a)
             and pts(series[a]) == pts(series[b])}
    for lab, (xs, ys, st) in series.items():
        code = codes.get(lab, lab)
        ok = [(x, y) for x, y, s in zip(xs, ys, st) if y is not None and np.isfinite(y) and not s.startswith("diverged")]
        bad = [x for x, y, s in zip(xs, ys, st) if y is None or not np.isfinite(y) or s.startswith("diverged")]
        ln, mk = line(code, width=2.5), marker(code, size=10)
        if lab in open_markers:
            ln["dash"] = "solid"
            mk["symbol"] = mk["symbol"] + "-open"
            mk["line"] = dict(width=2, color=mk["color"])
        if lab in under:
            ln["width"], mk["size"] = 7, 17
        fig.add_trace(go.Scatter(x=[p[0] for p in ok], y=[min(p[1], top) for p in ok], mode="lines+markers", name=lab,
                                 line=ln, marker=mk, legendgroup=lab))
        if bad:
            fig.add_trace(go.Scatter(x=bad, y=[top] * len(bad), mode="markers", name=f"{lab}: diverged",
                                     legendgroup=lab, showlegend=False,
                                     marker=dict(symbol="x-thin", size=14, color=mk["color"], line=dict(width=3, color=mk["color"])),
                                     hovertemplate=f"{lab}: diverged at %{{x:.3g}}<extra></extra>"))
    if baseline is not None:
        fig.add_hline(y=baseline[1], line=dict(color="#000000", dash="dash"), annotation_text=baseline[0],
                      annotation_position="bottom left")
    xs_all = sorted({float(x) for (xs, _, _) in series.values() for x in xs})
    # ticks at the swept values (a log axis would add small unlabelled-size minor digits)
    fig.update_xaxes(title=xlabel, type="log", tickvals=xs_all, ticktext=[f"{x:g}" for x in xs_all])
    fig.update_yaxes(title=ylabel)
    fig = style(fig, title, height=height)
    if len(series) > 3:
        fig.update_layout(legend=dict(orientation="v", yanchor="top", y=1.0, x=1.02, xanchor="left"),
                          margin_t=55 if title else 24)
    return fig


def _rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    return f"rgba({int(h[0:2], 16)}, {int(h[2:4], 16)}, {int(h[4:6], 16)}, {alpha})"


def drift_tracking(t, theta, static: tuple, dynamic: tuple, names: tuple = ("BONG, static", "BONG, predict step"),
                   code: str = "bong-lin-hess-fc", switch_at: int | None = None, title: str | None = None,
                   height: int = 470) -> go.Figure:
    """A drifting stream: left, each coordinate of the true parameter (black) and the two beliefs' means
    against t (the predict-step belief with its ±2σ band); right, the tracking error |μ_t − θ_t| of both.

    t (T + 1,); theta (T + 1, 2); static / dynamic: (mean (T + 1, 2), sd (T + 1, 2), error (T + 1,)) of BONG
    without and with the predict step; names: their legend names. Both are drawn in the look of ``code``
    (BONG's colour): the static belief wide and pale, the predict-step belief solid on top. ``switch_at``:
    the t of a sudden switch (a dotted vertical line). Legend: static, predict step, its band, true θ."""
    t = np.asarray(t)
    theta = np.asarray(theta, float)
    lk = look(code)
    fig = make_subplots(rows=2, cols=2, specs=[[{}, {"rowspan": 2}], [{}, None]], column_widths=[0.55, 0.45],
                        horizontal_spacing=0.15, vertical_spacing=0.1, shared_xaxes=True,
                        subplot_titles=["θ₁ against t", "tracking error ‖μₜ − θₜ‖", "θ₂ against t"])

    def clean(v):
        v = np.asarray(v, float)
        return [None if not np.isfinite(a) else float(a) for a in v]

    (ms, ss, es), (md, sd, ed) = static, dynamic
    ms, ss, md, sd = (np.asarray(a, float) for a in (ms, ss, md, sd))
    for j, row in ((0, 1), (1, 2)):
        first = j == 0
        lo, hi = md[:, j] - 2 * sd[:, j], md[:, j] + 2 * sd[:, j]
        fig.add_trace(go.Scatter(x=np.concatenate([t, t[::-1]]), y=clean(np.concatenate([hi, lo[::-1]])), fill="toself",
                                 fillcolor=_rgba(lk.color, 0.15), line=dict(width=0, color=lk.color), hoverinfo="skip",
                                 name="±2σ", legendgroup="dynamic band", showlegend=first, legendrank=3),
                      row=row, col=1)
        fig.add_trace(go.Scatter(x=t, y=clean(ms[:, j]), mode="lines", name=names[0], legendgroup="static",
                                 showlegend=first, legendrank=1, line=dict(color=lk.color, width=7), opacity=0.4,
                                 hovertemplate=f"{names[0]}<br>t = %{{x}}: μ{'₁₂'[j]} = %{{y:.3g}}<extra></extra>"),
                      row=row, col=1)
        fig.add_trace(go.Scatter(x=t, y=clean(md[:, j]), mode="lines", name=names[1], legendgroup="dynamic",
                                 showlegend=first, legendrank=2, line=dict(color=lk.color, width=2.5, dash="solid"),
                                 hovertemplate=f"{names[1]}<br>t = %{{x}}: μ{'₁₂'[j]} = %{{y:.3g}}<extra></extra>"),
                      row=row, col=1)
        fig.add_trace(go.Scatter(x=t, y=clean(theta[:, j]), mode="lines", name="true θ", legendgroup="truth",
                                 showlegend=first, legendrank=4, line=dict(color="#000000", width=2, dash="dash"),
                                 hovertemplate=f"true θ{'₁₂'[j]}<br>t = %{{x}}: %{{y:.3g}}<extra></extra>"),
                      row=row, col=1)
        fig.update_yaxes(title=f"θ{'₁₂'[j]}", row=row, col=1)
    fig.add_trace(go.Scatter(x=t, y=clean(es), mode="lines", name=names[0], legendgroup="static", showlegend=False,
                             line=dict(color=lk.color, width=7), opacity=0.4,
                             hovertemplate=f"{names[0]}<br>t = %{{x}}: error %{{y:.3g}}<extra></extra>"), row=1, col=2)
    fig.add_trace(go.Scatter(x=t, y=clean(ed), mode="lines", name=names[1], legendgroup="dynamic", showlegend=False,
                             line=dict(color=lk.color, width=2.5, dash="solid"),
                             hovertemplate=f"{names[1]}<br>t = %{{x}}: error %{{y:.3g}}<extra></extra>"), row=1, col=2)
    if switch_at is not None:
        for row, col in ((1, 1), (2, 1), (1, 2)):
            fig.add_vline(x=switch_at, line=dict(color="#777777", dash="dot", width=1.5), row=row, col=col)
    fig.update_xaxes(title="observations t", row=2, col=1)
    fig.update_xaxes(title="observations t", row=1, col=2)
    fig.update_yaxes(title="distance to θ", rangemode="tozero", row=1, col=2)
    fig = style(fig, title, height=height)
    fig.update_layout(margin_t=110 if title else 80, legend=dict(orientation="h", yanchor="bottom", y=1.09, x=0))
    return fig


def _pos(v, floor: float = 1e-16):
    """Values for a log axis: non-finite -> None, below ``floor`` -> floor."""
    return [None if not np.isfinite(a) else max(float(a), floor) for a in np.asarray(v, float)]


def batch_vs_online(batch: tuple, bong: tuple, implicit: tuple, gap: tuple, bong_code: str = "bong-lin-hess-fc",
                    reference: str = "the batch posterior", title: str | None = None, height: int = 430) -> go.Figure:
    """Left: the distance |mu - mu_ref| of each method's mean to the reference posterior against the number of
    per-example gradient evaluations spent (log-log); batch BLR after each pass over the data, BONG after each
    example, the implicit RVGA after each example (its fixed-point iterations counted). Right: the gap
    max |mu_t(implicit) - mu_t(BONG)| after each example t (log y; 0 drawn at 1e-16).

    batch / bong / implicit: (evaluations, distances); gap: (t, gaps); bong_code: BONG's grid code (its look);
    batch BLR and the implicit RVGA in their looks ("batch-blr", "implicit-rvga")."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.58, 0.42], horizontal_spacing=0.16,
                        subplot_titles=[f"distance to {reference}", "implicit − BONG"])
    for code, name, (ev, err), mode in (("batch-blr", "batch BLR (one point per pass)", batch, "lines+markers"),
                                        (bong_code, "BONG (one step per example)", bong, "lines"),
                                        ("implicit-rvga", "implicit RVGA", implicit, "lines")):
        ev, err = np.asarray(ev, float), np.asarray(err, float)
        keep = ev > 0
        fig.add_trace(go.Scatter(x=ev[keep], y=_pos(err[keep]), mode=mode, name=name, legendgroup=code,
                                 line=line(code, width=3.5 if code == bong_code else 2.5), marker=marker(code, size=7),
                                 hovertemplate=f"{name}<br>%{{x:.0f}} gradient evaluations: distance %{{y:.3g}}"
                                               "<extra></extra>"), row=1, col=1)
    t, g = gap
    fig.add_trace(go.Scatter(x=list(np.asarray(t)), y=_pos(g), mode="lines+markers", name="implicit − BONG",
                             legendgroup="implicit-rvga", showlegend=False, line=line("implicit-rvga"),
                             marker=marker("implicit-rvga", size=6),
                             hovertemplate="after example %{x}: max |μ(implicit) − μ(BONG)| = %{y:.3g}<extra></extra>"),
                  row=1, col=2)
    fig.update_xaxes(title="per-example gradient evaluations", type="log", dtick=1, row=1, col=1)
    fig.update_yaxes(title="‖μ − μ_ref‖", type="log", dtick=1, exponentformat="power", row=1, col=1)
    fig.update_xaxes(title="examples seen t", zeroline=False, row=1, col=2)
    fig.update_yaxes(title="largest gap in μ", type="log", dtick=1, exponentformat="power", row=1, col=2)
    fig = style(fig, title, height=height)
    fig.update_layout(margin_t=110 if title else 80, legend=dict(orientation="h", yanchor="bottom", y=1.1, x=0))
    return fig


def runtime_vs_size(P, seconds: dict, orders: dict, title: str | None = None, height: int = 420) -> go.Figure:
    """Seconds per update against the number of parameters P (log-log), one line per method code ({code: (len(P),)},
    NaN = not measured), with dotted reference slopes P^k for every power k in ``orders`` ({code: k}, the
    paper's Table 3), each drawn through the median of its methods' first measured point."""
    P = np.asarray(P, float)
    fig = go.Figure()
    for code, s in seconds.items():
        fig.add_trace(go.Scatter(x=P, y=_pos(s, 1e-9), mode="lines+markers", name=label(code), legendgroup=code,
                                 line=line(code), marker=marker(code, size=8),
                                 hovertemplate=f"{label(code)}<br>P = %{{x:.0f}}: %{{y:.3g}} s<extra></extra>"))
    for k in sorted(set(orders.values())):
        firsts = []
        for code, s in seconds.items():
            s = np.asarray(s, float)
            ok = np.where(np.isfinite(s) & (s > 0))[0]
            if orders.get(code) == k and ok.size:
                firsts.append((P[ok[0]], s[ok[0]]))
        if not firsts:
            continue
        p0 = min(p for p, _ in firsts)
        s0 = float(np.median([v * (p0 / p) ** k for p, v in firsts]))
        fig.add_trace(go.Scatter(x=P, y=s0 * (P / p0) ** k, mode="lines", name=f"∝ P{str(k).translate(_SUPERSCRIPT)} (Table 3)",
                                 line=dict(color="#777777", dash="dot", width=1.5 + 0.5 * k), hoverinfo="skip"))
    fig.update_xaxes(title="number of parameters P", type="log", tickvals=list(P), ticktext=[f"{p:.0f}" for p in P])
    fig.update_yaxes(title="seconds per update", type="log", exponentformat="power")
    fig = style(fig, title, height=height)
    if len(seconds) > 3:
        fig.update_layout(legend=dict(orientation="v", yanchor="top", y=1.0, x=1.02, xanchor="left"),
                          margin_t=55 if title else 24)
    return fig
