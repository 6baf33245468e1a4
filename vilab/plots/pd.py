"""Figures of the positive-definiteness page (Tan 2025 Sec. 7 digest example; Khan & Nielsen 2018).

A 2 x 2 symmetric matrix M defines the level set {x : (x - c)^T M (x - c) = r}: an ellipse when
M is positive definite, a hyperbola when M is indefinite (one positive, one negative eigenvalue),
two parallel lines when M is singular with one positive eigenvalue, and nothing at all when M is
negative semi-definite. A precision "update" that lost positive definiteness is no longer a
Gaussian: its ellipse turns into a hyperbola.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import plotly.graph_objects as go

from plotly.subplots import make_subplots

from . import color, marker, style

__all__ = ["quadric_level_set", "level_set_figure", "eigenvalue_figure", "pd_loss_figure", "RULE_CODES", "RULE_LABELS",
           "rule_code", "nonzero_pattern", "sparsity_figure", "natgrad_comparison_figure", "step_size_figure"]

#: the method look (vilab.plots.look code) of each update rule this page compares: the precision update is
#: VN's update of the natural parameter (S_new = (1 - rho) S - rho Hessian), the T update Tan's natural
#: rule for the Cholesky factor T of the precision (Theorem 1(ii))
RULE_CODES = {
    "precision update": "vn",
    "T update": "tan-2n",
    "T update (T T^T)": "tan-2n",
    "precision (natural parameter, Table 1 lambda)": "vn",
    "covariance (kappa, Table 1)": "kappa",
    "Cholesky of covariance C (Thm 1(i))": "tan-1n",
    "Cholesky of precision T (Thm 1(ii))": "tan-2n",
    "T with Corollary 1": "tan-2n-cor1",
    "precision kept PD (Lin, Schmidt & Khan 2020)": "lsk",
}
#: short readable names of the Monte Carlo rules (vilab.theory.definiteness.PD_RULES labels)
RULE_LABELS = {
    "precision (natural parameter, Table 1 lambda)": "precision Σ⁻¹",
    "covariance (kappa, Table 1)": "covariance Σ",
    "Cholesky of covariance C (Thm 1(i))": "Cholesky C of Σ",
    "Cholesky of precision T (Thm 1(ii))": "Cholesky T of Σ⁻¹",
    "T with Corollary 1": "T with Corollary 1",
    "precision kept PD (Lin, Schmidt & Khan 2020)": "Σ⁻¹ kept PD (Lin et al.)",
}


def rule_code(name: str) -> str:
    """The look code of an update rule (its own name when it has none)."""
    return RULE_CODES.get(name, RULE_CODES.get(name.split(":")[0].strip(), name))


def quadric_level_set(M, center=(0.0, 0.0), r: float = 1.0, extent: float = 5.0, n: int = 200,
                      rtol: float = 1e-10) -> tuple[np.ndarray, np.ndarray, str]:
    """Points (x, y) of {x : (x - center)^T M (x - center) = r} for a symmetric 2 x 2 M, and its kind.

    kind is "ellipse", "hyperbola", "lines" (singular M with one positive eigenvalue) or "empty"
    (M negative semi-definite: no point). Hyperbola branches and lines are clipped to a box of
    half-width ``extent`` around the centre and separated by NaN.
    """
    M = np.asarray(M, float)
    if M.shape != (2, 2) or not np.all(np.isfinite(M)):
        raise ValueError(f"The level set needs a finite 2 x 2 matrix; got shape {M.shape}.")
    if r <= 0:
        raise ValueError(f"The level r must be positive; got {r}.")
    M = 0.5 * (M + M.T)
    w, Q = np.linalg.eigh(M)  # ascending
    c = np.asarray(center, float)
    tiny = rtol * max(np.abs(w).max(), 1e-300)
    if w[1] <= tiny:
        return np.array([]), np.array([]), "empty"
    if w[0] > tiny:
        t = np.linspace(0, 2 * np.pi, n)
        u = np.vstack([np.sqrt(r / w[0]) * np.cos(t), np.sqrt(r / w[1]) * np.sin(t)])
        kind = "ellipse"
        pts = Q @ u
        return pts[0] + c[0], pts[1] + c[1], kind
    a = np.sqrt(r / w[1])  # distance of the branches along eigenvector 2
    if w[0] >= -tiny:  # singular: two parallel lines u2 = +-a
        s = np.linspace(-extent, extent, 2)
        u1 = np.concatenate([s, [np.nan], s])
        u2 = np.concatenate([np.full(2, a), [np.nan], np.full(2, -a)])
        kind = "lines"
    else:
        b = np.sqrt(r / -w[0])
        smax = np.arcsinh(max(extent, 1e-12) * np.sqrt(2.0) / b)
        s = np.linspace(-smax, smax, n // 2)
        u1 = np.concatenate([b * np.sinh(s), [np.nan], b * np.sinh(s)])
        u2 = np.concatenate([a * np.cosh(s), [np.nan], -a * np.cosh(s)])
        kind = "hyperbola"
    pts = Q @ np.vstack([u1, u2])
    return pts[0] + c[0], pts[1] + c[1], kind


def level_set_figure(matrices: Mapping[str, np.ndarray], center=(0.0, 0.0), r: float = 1.0, extent: float = 8.0,
                     points: Mapping[str, tuple] | None = None, title: str | None = None, height: int = 480) -> go.Figure:
    """Level sets x^T M x = r of several 2 x 2 "precision" matrices, each labelled by its kind.

    ``points`` (name -> (x, y)) marks e.g. the sampled theta. Axes are equal and span +-extent.
    """
    fig = go.Figure()
    for i, (name, M) in enumerate(matrices.items()):
        x, y, kind = quadric_level_set(M, center, r, extent=2 * extent)
        code = rule_code(name)
        # an ellipse (a Gaussian) is drawn solid and filled; a hyperbola or lines (no Gaussian) dashed, unfilled
        ln = dict(color=color(code, i), width=3, dash="solid" if kind == "ellipse" else "dash")
        fig.add_trace(go.Scatter(x=x if x.size else [None], y=y if y.size else [None], mode="lines",
                                 name=f"{name}: {kind}", line=ln, fill="toself" if kind == "ellipse" else None,
                                 opacity=0.9))
    for name, (px, py) in (points or {}).items():
        fig.add_trace(go.Scatter(x=[px], y=[py], mode="markers", name=name,
                                 marker=dict(symbol="x", size=13, color="black")))
    c = np.asarray(center, float)
    fig.update_xaxes(range=[c[0] - extent, c[0] + extent], title="θ₁", zeroline=True, constrain="domain")
    fig.update_yaxes(range=[c[1] - extent, c[1] + extent], title="θ₂", scaleanchor="x", scaleratio=1, zeroline=True,
                     constrain="domain")
    return style(fig, title=title, height=height)


def eigenvalue_figure(rhos, eigenvalues: Mapping[str, np.ndarray], current: float | None = None,
                      markers: Mapping[str, float] | None = None, title: str | None = None,
                      ylabel: str = "eigenvalue", height: int = 400, show_current: bool = True) -> go.Figure:
    """Eigenvalues (n, k) of each update's precision matrix against the step size rho.

    The zero line separates PD from indefinite. ``markers`` (label -> rho) draws dotted vertical
    lines, labelled in the legend (e.g. where the precision update turns indefinite); ``current``
    a dashed line at the slider's value (in the legend unless ``show_current`` is False).
    """
    rhos = np.asarray(rhos, float)
    fig = go.Figure()
    for i, (name, ev) in enumerate(eigenvalues.items()):
        ev = np.asarray(ev, float)
        if ev.ndim != 2 or ev.shape[0] != rhos.shape[0]:
            raise ValueError(f"{name!r}: eigenvalues must have shape (len(rhos), k); got {ev.shape}.")
        code = rule_code(name)
        for j in range(ev.shape[1]):
            # the smallest eigenvalue solid with the rule's markers, the others dotted
            fig.add_trace(go.Scatter(x=rhos, y=ev[:, j], mode="lines+markers" if j == 0 else "lines",
                                     name=name if j == 0 else f"{name} ({j + 1})", legendgroup=name, showlegend=j == 0,
                                     line=dict(color=color(code, i), width=2.5, dash="solid" if j == 0 else "dot"),
                                     marker=marker(code, size=8, maxdisplayed=10)))
    fig.add_hline(y=0.0, line=dict(color="black", width=1))
    # vertical reference lines as traces spanning the plotted values, so their labels sit in the legend
    vals = np.concatenate([np.asarray(ev, float).ravel() for ev in eigenvalues.values()] + [np.zeros(1)])
    vals = vals[np.isfinite(vals)]
    lo, hi = float(vals.min()), float(vals.max())
    for i, (label, x) in enumerate((markers or {}).items()):
        fig.add_trace(go.Scatter(x=[x, x], y=[lo, hi], mode="lines", name=label, hoverinfo="name",
                                 line=dict(color=["#555555", "#999999", "#222222", "#777777"][i % 4],
                                           dash=["dot", "dashdot", "longdash", "dot"][i % 4], width=2)))
    if current is not None:
        fig.add_trace(go.Scatter(x=[current, current], y=[lo, hi], mode="lines", name=f"rho = {current:g}",
                                 hoverinfo="name", line=dict(color="black", dash="dash", width=1.5),
                                 showlegend=show_current))
    fig.update_xaxes(title="step size ρ")
    fig.update_yaxes(title=ylabel)
    return style(fig, title=title, height=height)


def pd_loss_figure(fractions: Mapping[str, float], n_runs: int, title: str | None = None, height: int = 380) -> go.Figure:
    """Fraction of Monte Carlo runs that lost positive definiteness, per update rule, with
    binomial 95% intervals (normal approximation, clipped to [0, 1])."""
    if n_runs < 1:
        raise ValueError("The number of Monte Carlo runs must be positive.")
    names = list(fractions)
    p = np.array([float(fractions[n]) for n in names])
    if np.any((p < 0) | (p > 1)):
        raise ValueError("Fractions must lie between 0 and 1.")
    half = 1.96 * np.sqrt(p * (1 - p) / n_runs)
    fig = go.Figure(go.Bar(x=[RULE_LABELS.get(n, n) for n in names], y=p,
                           marker_color=[color(rule_code(n), i) for i, n in enumerate(names)],
                           error_y=dict(type="data", array=np.minimum(half, 1 - p), arrayminus=np.minimum(half, p)),
                           text=[f"{v:.1%}" for v in p], textposition="outside"))
    fig.update_yaxes(range=[0, 1.15], title="runs that lost positive definiteness", tickformat=".0%")
    return style(fig, title=title, height=height)


# ------------------------------------------------------------------------ sparse factors (Tan 2025 Fig. 5)

def nonzero_pattern(A, rtol: float = 1e-12) -> np.ndarray:
    """0/1 pattern of the entries of A larger than ``rtol`` times its largest entry (round-off is zero)."""
    A = np.asarray(A, float)
    top = float(np.max(np.abs(A))) if A.size else 0.0
    return (np.abs(A) > rtol * max(top, 1e-300)).astype(float)


def sparsity_figure(matrices: Mapping[str, np.ndarray], code: str = "tan-1n", rtol: float = 1e-12,
                    title: str | None = None, height: int = 360) -> go.Figure:
    """Tan (2025) Fig. 5: the nonzero pattern of each matrix (shaded = nonzero), side by side, rows
    top to bottom as in a printed matrix. The shade is the colour of the method ``code``; the
    hover shows the entry's value."""
    names = list(matrices)
    if not names:
        raise ValueError("Give at least one matrix.")
    n = len(names)
    ncol = min(n, 3)  # three a row: a square panel per matrix stays large enough to read
    nrow = -(-n // ncol)
    fig = make_subplots(rows=nrow, cols=ncol, subplot_titles=names, horizontal_spacing=0.06,
                        vertical_spacing=0.2 if nrow > 1 else 0.0)
    shade = color(code)
    for j, name in enumerate(names):
        A = np.asarray(matrices[name], float)
        if A.ndim != 2:
            raise ValueError(f"{name!r} must be a matrix; got shape {A.shape}.")
        Z = nonzero_pattern(A, rtol)
        idx = np.arange(1, A.shape[0] + 1)
        fig.add_trace(go.Heatmap(z=Z, x=np.arange(1, A.shape[1] + 1), y=idx, zmin=0, zmax=1, showscale=False,
                                 colorscale=[[0, "#F2F2F2"], [1, shade]], customdata=A, xgap=1, ygap=1, name=name,
                                 hovertemplate="row %{y}, column %{x}: %{customdata:.3g}<extra></extra>"),
                      row=j // ncol + 1, col=j % ncol + 1)
        fig.update_yaxes(range=[A.shape[0] + 0.5, 0.5], scaleanchor=f"x{j + 1 if j else ''}", showgrid=False,
                         zeroline=False, showticklabels=j % ncol == 0, constrain="domain",
                         row=j // ncol + 1, col=j % ncol + 1)
        fig.update_xaxes(range=[0.5, A.shape[1] + 0.5], showgrid=False, zeroline=False, constrain="domain",
                         row=j // ncol + 1, col=j % ncol + 1)
    return style(fig, title=title, height=height)


def natgrad_comparison_figure(sparse, masked, mask, code: str = "tan-2n", title: str | None = None,
                              height: int = 400) -> go.Figure:
    """The free entries (column-major order, labelled (row, column) from 1) of the sparse natural
    gradient and of the masked dense natural gradient as bars, and their difference as a line."""
    sparse, masked, M = (np.asarray(x, float) for x in (sparse, masked, mask))
    if not sparse.shape == masked.shape == M.shape or sparse.ndim != 2:
        raise ValueError("The two natural gradients and the mask must be matrices of one shape.")
    cols, rows = np.nonzero(M.T)
    labels = [f"({r + 1},{c + 1})" for r, c in zip(rows, cols)]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=labels, y=sparse[rows, cols], name="sparse natural gradient (right)",
                         marker_color=color(code)))
    fig.add_trace(go.Bar(x=labels, y=masked[rows, cols], name="dense natural gradient, masked (wrong)",
                         marker_color="#999999"))
    fig.add_trace(go.Scatter(x=labels, y=sparse[rows, cols] - masked[rows, cols], mode="lines+markers",
                             name="difference", line=dict(color="black", width=1.5), marker=dict(size=5)))
    fig.update_layout(barmode="group")
    fig.update_xaxes(title="free entry (row, column) of the factor", type="category")
    fig.update_yaxes(title="natural-gradient entry")
    return style(fig, title=title, height=height)


def step_size_figure(runs: Mapping[str, dict], optimum: float, title: str | None = None,
                     height: int = 420) -> go.Figure:
    """Tan (2025) Fig. 2: two panels against the iteration. Left: the step size rho_t that backtracking
    accepted (log axis, 1 at the top). Right: the distance to the optimum, L* - L_t (log axis), which shows
    which update converges faster. ``runs``: label -> {"rho": (k,), "elbo": (k + 1,)}
    (:func:`vilab.theory.definiteness.backtracking_step_sizes`); ``optimum``: L*, computed independently."""
    fig = go.Figure(layout=dict(xaxis=dict(domain=[0.0, 0.41], anchor="y"), yaxis=dict(anchor="x"),
                                xaxis2=dict(domain=[0.59, 1.0], anchor="y2"), yaxis2=dict(anchor="x2")))
    rmin, gaps = 1.0, []
    for i, (name, r) in enumerate(runs.items()):
        code = rule_code(name)
        rho = np.asarray(r["rho"], float)
        gap = np.maximum(float(optimum) - np.asarray(r["elbo"], float), 1e-10)
        rmin = min(rmin, float(rho.min()) if rho.size else 1.0)
        gaps.append(gap)
        ln = dict(color=color(code, i), width=2.5, dash="solid" if i == 0 else "dash")
        fig.add_trace(go.Scatter(x=np.arange(1, rho.size + 1), y=rho, mode="lines+markers", name=name,
                                 legendgroup=name, line=ln, marker=marker(code, size=10),
                                 hovertemplate="iteration %{x}: ρ = %{y:g}<extra>" + name + "</extra>"))
        fig.add_trace(go.Scatter(x=np.arange(gap.size), y=gap, mode="lines+markers", name=name, legendgroup=name,
                                 showlegend=False, line=ln, marker=marker(code, size=10), xaxis="x2", yaxis="y2",
                                 hovertemplate="iteration %{x}: L* − L = %{y:.3g}<extra>" + name + "</extra>"))
    lo = int(np.floor(np.log10(rmin)))
    fig.layout.yaxis.update(type="log", title_text="step size ρ accepted", range=[lo - 0.3, 0.3], dtick=1,
                            exponentformat="power")
    fig.layout.yaxis2.update(type="log", title_text="L* − L (gap to the optimum)", exponentformat="power", dtick=3)
    fig.layout.xaxis.update(title_text="iteration")
    fig.layout.xaxis2.update(title_text="iteration")
    return style(fig, title, height=height)
