"""The stability atlas (Stability atlas page): iterations to tolerance over step size x condition number,
with the analytic step-size limits drawn over it (:func:`vilab.theory.stability.atlas`, :func:`vilab.theory.stability.atlas_limits`).

Pure data in, ``go.Figure`` out::

    fig = atlas_figure(stability.atlas("srvn", kappas, steps), stability.atlas_limits(fine_kappas, c0))

Cells that converged are coloured by their iteration count (log scale, fewer = brighter); runs that reached
the step limit and runs that diverged have their own flat colours. A transparent marker sits at the centre of
every cell so that a click selects it (Plotly heatmaps are not selectable): its ``customdata`` is
(row, column, iterations).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import plotly.graph_objects as go

from . import label, line, style

__all__ = ["atlas_figure", "cell_edges", "limit_curves", "DIVERGED_COLOR", "MAX_STEPS_COLOR", "LIMIT_NAMES"]

DIVERGED_COLOR = "#7f2704"    # dark brown: the run left the Gaussian family or blew up
MAX_STEPS_COLOR = "#d4d4d4"   # light grey: no convergence within the step limit
_HALO = "rgba(255,255,255,0.85)"
_SCALE = "Viridis_r"          # few iterations bright yellow, many dark purple

#: how each limit is described on screen: (legend name, kind)
LIMIT_NAMES = {
    "theorem2": ("Thm 2 guarantee: η > 0", "guarantee"),
    "precision_pd": ("precision stays PD (exact)", "exact condition"),
}
_SHARED = {"gd-mc": "1/λ_max", "tan-1E": "1/λ_max", "bwgd": "1/λ_max", "fbgvi": "1/λ_max",
           "gd-mv": "min(2/λ_max, 4/λ_max²)", "srvn": "min(2, 2/x₀², 4/(x₀²−1))", "tan-1N": "min(2, 2/x₀², 4/(x₀²−1))",
           "vn": "1", "tan-2N": "2", "tan-2N-cor1": "2", "tan-2E": "min(2/λ_max, λ_min)"}


def cell_edges(centres) -> np.ndarray:
    """Edges of cells centred (in log scale) on the increasing positive ``centres``: geometric means of
    neighbours, the ends half a step beyond (len + 1 values)."""
    c = np.log10(np.asarray(centres, float))
    if c.size == 1:
        return 10.0 ** np.array([c[0] - 0.125, c[0] + 0.125])
    mid = 0.5 * (c[1:] + c[:-1])
    return 10.0 ** np.concatenate([[c[0] - (mid[0] - c[0])], mid, [c[-1] + (c[-1] - mid[-1])]])


def _clip(x, lo, hi):
    x = np.asarray(x, float).copy()
    x[~np.isfinite(x) | (x < lo) | (x > hi)] = np.nan
    return x


def limit_curves(method: str, limits: Mapping, show_all: bool = False) -> list[dict]:
    """The limit curves to draw for ``method``: dicts with "key", "name", "kind" ("linearisation",
    "guarantee", "exact condition"), "x" (the step-size limit at each kappa of ``limits["kappas"]``), "owner"
    (the method whose look it takes, or None), "own" (whether it is ``method``'s own limit)."""
    out = []
    lin = limits.get("linearised", {})
    groups: dict = {}
    for m, v in lin.items():
        if m not in _SHARED:
            continue
        groups.setdefault(_SHARED[m], []).append(m)
    for formula, owners in groups.items():
        own = method in owners
        if not (own or show_all):
            continue
        first = method if own else owners[0]
        names = [first] + [m for m in owners if m != first]
        name = f"{label(first)} limit (linearised)" if own else f"ρ < {formula}"
        out.append({"key": f"lin:{formula}", "name": name, "kind": "linearisation", "x": np.asarray(lin[first], float),
                    "owner": first, "own": own, "owners": ", ".join(label(m) for m in names), "formula": formula})
    if method in ("srvn", "tan-1N") or show_all:
        name, kind = LIMIT_NAMES["theorem2"]
        out.append({"key": "theorem2", "name": name, "kind": kind, "x": np.asarray(limits["theorem2"], float),
                    "owner": None, "own": method in ("srvn", "tan-1N"), "owners": "SR-VN",
                    "formula": "2 min(ρ₁, ρ₂)"})
    if method == "vn" or show_all:
        name, kind = LIMIT_NAMES["precision_pd"]
        out.append({"key": "precision_pd", "name": name, "kind": kind, "x": np.asarray(limits["precision_pd"], float),
                    "owner": None, "own": method == "vn", "owners": "VN, first step",
                    "formula": "1/(1 − c₀²λ_min)"})
    return out


def atlas_figure(at, limits: Mapping | None = None, show_all: bool = False, kappa_range=None,
                 selected: tuple[int, int] | None = None, title: str | None = None, height: int = 470) -> go.Figure:
    """The atlas ``at`` (a :class:`vilab.theory.stability.Atlas`) as a heatmap over step size (x, log) and condition
    number (y, log), restricted to ``kappa_range`` = (lo, hi) when given, with the limit curves of
    :func:`limit_curves` (``limits`` from :func:`vilab.theory.stability.atlas_limits`) and the ``selected`` cell
    (row, column of the atlas) outlined."""
    ks, rhos = np.asarray(at.kappas, float), np.asarray(at.step_sizes, float)
    rows = np.arange(ks.size)
    if kappa_range is not None:
        lo, hi = sorted(float(v) for v in kappa_range)
        rows = rows[(ks >= lo * (1 - 1e-9)) & (ks <= hi * (1 + 1e-9))]
        if rows.size == 0:
            raise ValueError(f"No condition number of the atlas lies between {lo:g} and {hi:g}; widen the range.")
    ks_shown = ks[rows]
    its = np.asarray(at.iterations, float)[rows]
    out = np.asarray(at.outcome)[rows]
    xe, ye = cell_edges(rhos), cell_edges(ks_shown)
    n_max = int(at.n_steps)
    conv = out == "converged"
    fig = go.Figure()
    z = np.where(conv, np.log10(np.maximum(its, 1.0)), np.nan)
    top = max(np.log10(max(n_max, 10)), 1.0)
    ticks = [v for v in range(0, int(np.floor(top)) + 1)]
    fig.add_trace(go.Heatmap(x=xe, y=ye, z=z, zmin=0.0, zmax=top, colorscale=_SCALE, hoverinfo="skip",
                             name="iterations to tolerance", showscale=True,
                             colorbar=dict(title=dict(text=f"iterations to KL < {float(at.tol):.0e}", side="right"),
                                           tickvals=ticks,
                                           ticktext=[f"{10 ** v:,}" for v in ticks], thickness=14, len=0.9)))
    for mask, colour in ((out == "diverged", DIVERGED_COLOR), ((out == "max_steps") | (out == "stalled"), MAX_STEPS_COLOR)):
        if mask.any():
            fig.add_trace(go.Heatmap(x=xe, y=ye, z=np.where(mask, 1.0, np.nan), zmin=0, zmax=1, showscale=False,
                                     colorscale=[[0, colour], [1, colour]], hoverinfo="skip"))
    # legend entries of the flat colours
    for name, colour, present in ((f"not converged in {n_max:,} steps", MAX_STEPS_COLOR,
                                   bool(((out == "max_steps") | (out == "stalled")).any())),
                                  ("diverged", DIVERGED_COLOR, bool((out == "diverged").any()))):
        if present:
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name, hoverinfo="skip",
                                     marker=dict(symbol="square", size=14, color=colour,
                                                 line=dict(width=1, color="#555555"))))
    # the analytic limits over kappa
    x_lo, x_hi = float(xe[0]), float(xe[-1])
    if limits is not None:
        lk = np.asarray(limits["kappas"], float)
        keep = (lk >= ye[0] * (1 - 1e-9)) & (lk <= ye[-1] * (1 + 1e-9))
        for c in limit_curves(at.method, limits, show_all):
            x = np.asarray(c["x"], float)[keep]
            y = lk[keep]
            if c["key"] == "theorem2":  # the region rho < limit, hatched
                inside = np.isfinite(x) & (x > x_lo)
                if not inside.any():
                    continue
                xr, yr = np.minimum(x[inside], x_hi), y[inside]
                fig.add_trace(go.Scatter(x=np.r_[x_lo, xr, x_lo], y=np.r_[yr[0], yr, yr[-1]], mode="lines",
                                         fill="toself", fillcolor="rgba(255,255,255,0.35)", name=c["name"],
                                         fillpattern=dict(shape="/", fgcolor="#111111", size=9, solidity=0.25),
                                         line=dict(color="#111111", width=2.5), hoverinfo="skip"))
                continue
            xs = _clip(x, x_lo, x_hi)
            if np.all(np.isnan(xs)):
                continue
            own = c["own"]
            width = 4.0 if own else 2.5
            fig.add_trace(go.Scatter(x=xs, y=y, mode="lines", line=dict(color=_HALO, width=width + 3),
                                     hoverinfo="skip", showlegend=False, name="halo"))
            if c["owner"] is not None:
                ln = line(c["owner"], width=width)
                if not own:
                    ln["dash"] = "dot"
            else:
                ln = dict(color="#111111", width=width, dash="dashdot")
            fig.add_trace(go.Scatter(x=xs, y=y, mode="lines", line=ln, name=c["name"],
                                     hovertemplate=f"ρ < {c['formula']} ({c['kind']}): {c['owners']}"
                                                   + "<br>κ = %{y:.3g}: ρ = %{x:.3g}<extra></extra>"))
    # clickable cell centres
    K, R = rows.size, rhos.size
    ii, jj = np.meshgrid(rows, np.arange(R), indexing="ij")
    def _say(o, n):
        if o == "converged":
            return f"converged in {int(n)} iteration" + ("" if int(n) == 1 else "s")
        return "diverged" if o == "diverged" else f"no convergence in {n_max:,} steps"

    text = [_say(o, n) for o, n in zip(out.ravel(), its.ravel())]
    fig.add_trace(go.Scatter(
        x=np.tile(rhos, K), y=np.repeat(ks_shown, R), mode="markers", name="cells", showlegend=False,
        marker=dict(size=16, color="rgba(0,0,0,0)", symbol="square"),
        customdata=np.stack([ii.ravel(), jj.ravel(), its.ravel()], axis=1), text=text,
        hovertemplate="step size ρ = %{x:.3g}, κ = %{y:.3g}<br>%{text}<br>click: open this run<extra></extra>"))
    if selected is not None:
        i, j = selected
        if i in set(rows.tolist()) and 0 <= j < R:
            fig.add_trace(go.Scatter(x=[rhos[j]], y=[ks[i]], mode="markers", name="selected run", showlegend=False,
                                     hoverinfo="skip",
                                     marker=dict(symbol="square-open", size=22, color="#000000", line=dict(width=3))))
    fig.update_xaxes(type="log", title="step size ρ", range=[np.log10(x_lo), np.log10(x_hi)], dtick=1,
                     exponentformat="e", showgrid=False)
    fig.update_yaxes(type="log", title="condition number κ", range=[np.log10(ye[0]), np.log10(ye[-1])], dtick=1,
                     showgrid=False)
    style(fig, title=title, height=height)
    fig.update_layout(clickmode="event+select", dragmode=False, legend_itemsizing="constant", hovermode="closest")
    return fig
