"""The JSON a browser is sent for a figure, shaped so that Plotly can redraw it cheaply.

Streamlit draws a chart anew whenever its figure changes, then hands Plotly a JSON copy of the same figure a
moment later (``Plotly.react``). Plotly redraws everything on that second call if the figure has a template
(a copied template counts as a new one) or binary data arrays (decoded afresh, so "new" data) or no
``datarevision``. :func:`browser_spec` gives the same picture without the first two: the template's values are written
into the figure itself (as Plotly applies them: layout defaults under the figure's own values, each axis and
subplot of a kind from the template's entry for that kind, ``annotationdefaults`` under every annotation, the
i-th trace of a type from the template's (i mod n)-th entry for that type) and arrays as plain lists. No
``datarevision`` is set: a fixed one made plotly.js 4.1.1 throw on the next figure of a contour chart (issue 37);
vilab's chart element gives every figure it draws a revision of its own.

Plotly turns some options on when the figure itself sets a related one, not when a template does (an axis line
with a line colour, grid and zero lines except on bar-like traces' position axis, a colour scale with a colour
bar): the flattening keeps each as Plotly would set it with the template. Only vilab's own templates are
flattened, on figures without 3-D traces. tests/browser/test_redraw.py checks, in Plotly.js itself, that the
full figure Plotly computes is unchanged (every figure of five pages, and one with every trace kind).
"""

from __future__ import annotations

import copy
import functools
import re

import numpy as np

__all__ = ["as_lists", "browser_spec"]

_3D = {"scatter3d", "surface", "mesh3d", "cone", "streamtube", "volume", "isosurface"}
# layout containers a template entry applies to under every id: xaxis -> xaxis, xaxis2, ...
_SUBPLOTS = ("xaxis", "yaxis", "scene", "polar", "ternary", "geo", "mapbox", "map", "smith", "coloraxis")
_NOT_CARTESIAN = _3D | {
    "pie", "table", "sunburst", "treemap", "icicle", "funnelarea", "parcoords", "parcats", "sankey", "indicator",
    "scattergeo", "choropleth", "scattermap", "scattermapbox", "choroplethmap", "choroplethmapbox", "densitymap",
    "densitymapbox", "scatterpolar", "scatterpolargl", "barpolar", "scatterternary", "scattersmith", "splom"}


def _under(default, own):
    """``own`` with ``default``'s entries filled in where ``own`` has none (dicts merged deeply; ``own`` wins)."""
    if not isinstance(default, dict) or not isinstance(own, dict):
        return copy.deepcopy(default) if own is None else own
    out = dict(own)
    for k, v in default.items():
        out[k] = _under(v, own.get(k))
    return out


def as_lists(v):
    """``v`` with numpy arrays (anywhere inside) as lists, numpy numbers as Python numbers and tuples as lists:
    the values of a figure as :func:`browser_spec` sends them (new containers all the way down)."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, dict):
        return {k: as_lists(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [as_lists(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def _subplot_ids(layout: dict, data: list) -> dict[str, set[str]]:
    """For each subplot kind of :data:`_SUBPLOTS`, the ids the figure uses (layout keys and trace references)."""
    ids: dict[str, set[str]] = {k: set() for k in _SUBPLOTS}
    for key in layout:
        m = re.fullmatch(r"([a-z]+?)(\d*)", key)
        if m and m.group(1) in ids:
            ids[m.group(1)].add(key)
    for tr in data:
        kind = tr.get("type", "scatter")
        if kind not in _NOT_CARTESIAN:
            for ax in ("x", "y"):
                ref = tr.get(f"{ax}axis") or ax
                ids[f"{ax}axis"].add(f"{ax}axis{ref[1:]}")
        refs = [tr.get(a) for a in ("scene", "geo", "subplot", "coloraxis")]
        refs += [(tr.get(c) or {}).get("coloraxis") for c in ("marker", "line") if isinstance(tr.get(c), dict)]
        for ref in refs:
            if isinstance(ref, str):
                m = re.fullmatch(r"([a-z]+?)(\d*)", ref)
                if m and m.group(1) in ids:
                    ids[m.group(1)].add(ref)
        if kind in _3D and not tr.get("scene"):
            ids["scene"].add("scene")
    return ids


# Plotly draws a cartesian axis's line, grid or zero line when the figure itself (not a template) gives one of
# its styles, else by a default: no line; a grid and zero line except on the position axis of bar-like traces
_SWITCHES = (("showline", ("linecolor", "linewidth")), ("showgrid", ("gridcolor", "gridwidth", "griddash")),
             ("zeroline", ("zerolinecolor", "zerolinewidth")))


def _no_grid_axes(data: list) -> set[str]:
    """The axes Plotly draws without grid lines by default: the position axis of bar-like ("oriented") traces."""
    out = set()
    for tr in data:
        kind = tr.get("type", "scatter")
        if kind not in ("bar", "box", "violin", "histogram", "funnel", "waterfall"):
            continue
        has_x, has_y = tr.get("x") is not None, tr.get("y") is not None
        if kind == "histogram":
            dflt = "h" if has_y and not has_x else "v"
        elif kind == "funnel":
            dflt = "v" if has_y and not has_x else "h"
        else:
            dflt = "h" if has_x and not has_y else "v"
        ax = "y" if (tr.get("orientation") or dflt) == "h" else "x"
        ref = tr.get(f"{ax}axis") or ax
        out.add(f"{ax}axis{ref[1:]}")
    return out


def _axis_under(entry: dict, own: dict | None, grid: bool) -> dict:
    """A cartesian axis with its template entry written in, each switch of :data:`_SWITCHES` kept as Plotly
    would set it with the template (``grid``: this axis has grid lines by default)."""
    own = own or {}
    out = _under(entry, own)
    for switch, styles in _SWITCHES:
        if (switch not in own and switch not in entry and not any(k in own for k in styles)
                and any(k in entry for k in styles)):
            out[switch] = grid and switch != "showline"
    return out


def flatten_template(layout: dict, data: list) -> tuple[dict, list]:
    """(layout, data) with ``layout["template"]`` written into them and the template removed."""
    tpl = layout.get("template")
    layout = {k: v for k, v in layout.items() if k != "template"}
    if not tpl:
        return layout, data
    tl, td = tpl.get("layout") or {}, tpl.get("data") or {}
    ids = _subplot_ids(layout, data)
    no_grid = _no_grid_axes(data)
    for key, val in tl.items():
        if key in ids:
            for sub in ids[key]:
                if key in ("xaxis", "yaxis"):
                    layout[sub] = _axis_under(tl.get(sub, val), layout.get(sub), sub not in no_grid)
                else:
                    layout[sub] = _under(tl.get(sub, val), layout.get(sub))
        elif re.fullmatch(r"[a-z]+\d+", key) and re.sub(r"\d+$", "", key) in ids:
            continue  # a numbered subplot's own template entry: applied above
        elif key.endswith("defaults"):
            items = key[: -len("defaults")] + "s"
            if layout.get(items):
                layout[items] = [_under(val, it) for it in layout[items]]
        else:
            layout[key] = _under(val, layout.get(key))
    seen: dict[str, int] = {}
    out = []
    for tr in data:
        kind = tr.get("type", "scatter")
        entries = td.get(kind) or []
        i = seen.get(kind, 0)
        seen[kind] = i + 1
        out.append(_trace_under(entries[i % len(entries)], tr) if entries else tr)
    return layout, out


def _colorscaled(c) -> bool:
    """Plotly's test (hasColorscale) of whether a trace's marker or line, as the figure gives it, has a colour
    scale: a colour bar, a scale, a shown scale, both limits, or numbers as colours."""
    if not isinstance(c, dict):
        return False
    color = c.get("color")
    numbers = isinstance(color, (list, tuple, np.ndarray)) and any(
        isinstance(x, (int, float, np.number)) and not isinstance(x, bool) for x in np.ravel(np.asarray(color, object)))
    return bool(numbers or c.get("showscale") is True or isinstance(c.get("colorbar"), dict) or c.get("colorscale")
                or (c.get("cmin") is not None and c.get("cmax") is not None))


def _trace_under(entry: dict, tr: dict) -> dict:
    """A trace with its template entry written in. A template's colour bar for the marker or line is left out
    where the trace has no colour scale there: written into the trace, it would give it one."""
    entry = {k: v for k, v in entry.items() if k != "type"}
    for part in ("marker", "line"):
        if isinstance(entry.get(part), dict) and "colorbar" in entry[part] and not _colorscaled(tr.get(part)):
            entry[part] = {k: v for k, v in entry[part].items() if k != "colorbar"}
    return _under(entry, tr)


def _flattenable(layout: dict, data: list) -> bool:
    """True for vilab's own templates on a figure without 3-D traces. For those, tests/browser/test_redraw.py
    shows Plotly computes the same full figure from the flattened form. Not in general: Plotly turns some
    options on when the figure itself sets a related one (an axis line is drawn when the figure gives its
    colour, not when a template does), so a template whose axes set a colour without the switch (Plotly's
    own "plotly", or vilab's 3-D scene axes) would change the picture."""
    tpl = layout.get("template")
    if not tpl or any(tr.get("type") in _3D for tr in data):
        return False
    return any(tpl == t for t in _vilab_templates())


@functools.cache
def _vilab_templates() -> tuple[dict, ...]:
    import plotly.io as pio

    from vilab.plots.theme import template  # the registered names of vilab's templates

    return tuple(pio.templates[template(lec)].to_plotly_json() for lec in (False, True))


def browser_spec(fig, width: float | None = None) -> dict:
    """The figure as the dict sent to the browser: vilab's template written in (:func:`flatten_template`,
    when :func:`_flattenable`), plain arrays and, when given, the width (px) it will be drawn at. ``fig`` itself is not changed."""
    # as_lists builds new containers all the way down: the one copy of the figure's data (fig is not changed)
    layout, data = dict(fig._layout), fig._data
    if _flattenable(layout, data):
        layout, data = flatten_template(layout, data)
    if width is not None and layout.get("width") is None:
        layout["width"] = width
    res = {"data": as_lists(data), "layout": as_lists(layout)}
    frames = [f._props for f in fig._frame_objs]
    if frames:
        res["frames"] = as_lists(frames)
    return res
