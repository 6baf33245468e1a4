"""vilab's one visual language: a look (label, colour, dash, marker) per method, and one Plotly template.

Methods are grouped by the geometry their steps follow, and the group shows at a glance, in colour,
in grey-scale and for colour-blind viewers (the colours are Okabe & Ito's palette and its shades):

=================  ======================  ==========  ===========================================
group              hues                    dash        methods
=================  ======================  ==========  ===========================================
natural gradient   blues and blue-greens   solid       VN, SR-VN, Tan's natural rules, SNNGM, ...
Euclidean          vermilion, orange, red  dashed      GD in (m, C) / (m, V), Tan's Euclidean rules, Adam
Wasserstein        reddish purple          dotted      BW-GD, FB-GVI
divergence         one hue per objective   per method  KL, Fisher, score-based, their batch forms
reference          black / grey            solid       target, exact posterior, Kalman filter, MCMC
=================  ======================  ==========  ===========================================

:func:`look` resolves any name a page uses for a method (a code such as ``"srvn"`` or a label such
as ``"SR-VN"``) to its :class:`Look`; a name with no entry gets a colour chosen from the name itself,
so it is the same on every page. :func:`template` is the one Plotly template; lecture mode is the
same template at projector sizes (every text >= 18 px, dark axis text).
"""

from __future__ import annotations

import re
import zlib
from typing import NamedTuple

import plotly.graph_objects as go
import plotly.io as pio

__all__ = ["Look", "LOOKS", "look", "method_of", "label", "line", "marker", "template", "TEMPLATE", "LECTURE_TEMPLATE",
           "FONT_PX", "LECTURE_FONT_PX", "GEOMETRY_DASH"]

GEOMETRY_DASH = {"natural": "solid", "euclidean": "dash", "wasserstein": "dot", "reference": "solid"}


class Look(NamedTuple):
    """How a method is drawn on every page."""

    label: str  # the name a student reads (legends, tables)
    color: str
    dash: str
    symbol: str  # Plotly marker symbol
    geometry: str  # natural / euclidean / wasserstein / divergence / reference / other


def _L(label, color, geometry, symbol="circle", dash=None):
    return Look(label, color, dash or GEOMETRY_DASH.get(geometry, "solid"), symbol, geometry)


# Okabe-Ito: blue #0072B2, sky #56B4E9, bluish green #009E73, vermilion #D55E00, orange #E69F00,
# reddish purple #CC79A7, yellow #F0E442, black; with darker shades where a group needs more.
LOOKS: dict[str, Look] = {
    # --- natural-gradient methods: blues, solid
    "vn": _L("VN", "#0072B2", "natural", "circle"),
    "srvn": _L("SR-VN", "#56B4E9", "natural", "diamond"),
    "lsk": _L("VN kept PD (Lin et al.)", "#3A5FCD", "natural", "hourglass"),
    "kappa": _L("natural, κ = (μ, σ²)", "#0072B2", "natural", "circle"),
    "xi": _L("natural, ξ = (μ, 1/σ²)", "#56B4E9", "natural", "square"),
    "lambda": _L("natural, λ = natural parameters", "#006D77", "natural", "hexagon"),
    "tan-1n": _L("natural, Cholesky C", "#009E73", "natural", "square"),
    "tan-1n-log": _L("natural, C with log diagonal", "#2CA25F", "natural", "square-open"),
    "tan-2n": _L("natural, Cholesky T", "#1B3F8B", "natural", "triangle-up"),
    "tan-2n-cor1": _L("natural, T with Corollary 1", "#00A6A6", "natural", "star"),
    "snngm": _L("SNNGM", "#0072B2", "natural", "circle"),
    "nadam": _L("natural-gradient Adam", "#56B4E9", "natural", "diamond"),
    "nagm": _L("NAGM", "#009E73", "natural", "square"),
    "vogn": _L("VOGN", "#1B3F8B", "natural", "triangle-up"),
    "natural": _L("natural gradient", "#0072B2", "natural", "circle"),
    # --- Euclidean methods: warm, dashed
    "gd-mc": _L("GD in (m, C)", "#D55E00", "euclidean", "x"),
    "gd-mv": _L("GD in (m, V)", "#E69F00", "euclidean", "cross"),
    "tan-1e": _L("Euclidean, Cholesky C", "#B2182B", "euclidean", "triangle-down"),
    "tan-2e": _L("Euclidean, Cholesky T", "#8C510A", "euclidean", "pentagon"),
    "adam": _L("Adam", "#D55E00", "euclidean", "x"),
    "pga": _L("ProxGenAdam", "#8C510A", "euclidean", "pentagon"),
    "euclidean": _L("Euclidean gradient", "#D55E00", "euclidean", "x"),
    # --- Wasserstein methods: purple, dotted
    "bwgd": _L("BW-GD", "#CC79A7", "wasserstein", "triangle-up"),
    "fbgvi": _L("FB-GVI", "#7B3294", "wasserstein", "triangle-down"),
    "svgd": _L("Gaussian SVGD", "#E7298A", "wasserstein", "star-triangle-up"),
    "wasserstein": _L("Wasserstein gradient", "#CC79A7", "wasserstein", "triangle-up"),
    # --- divergences (Chen, Nott & Tan): one hue per objective, the batch forms dashed
    "kl": _L("KL(q‖p)", "#0072B2", "divergence", "circle", "solid"),
    "kld": _L("KL(q‖p), stochastic", "#332288", "divergence", "circle-open", "dashdot"),
    "forward_kl": _L("KL(p‖q)", "#7B3294", "divergence", "triangle-up", "dashdot"),
    "fisher": _L("Fisher", "#E69F00", "divergence", "square", "solid"),
    "fdr": _L("Fisher, stochastic", "#E69F00", "divergence", "square", "solid"),
    "fdb": _L("Fisher, batch (FDb)", "#8C510A", "divergence", "diamond", "dash"),
    "score": _L("score-based", "#009E73", "divergence", "triangle-down", "solid"),
    "sdr": _L("score-based, stochastic", "#009E73", "divergence", "triangle-down", "solid"),
    "sdb": _L("score-based, batch (SDb)", "#005F46", "divergence", "star", "dash"),
    "weighted_fisher": _L("weighted Fisher", "#CC79A7", "divergence", "pentagon", "dot"),
    "bam": _L("batch and match", "#B2182B", "divergence", "x", "longdash"),
    "gsm": _L("Gaussian score matching", "#E08214", "divergence", "triangle-down", "dashdot"),
    # --- references: black and grey
    "true": _L("target", "#000000", "reference", "x"),
    "target": _L("target", "#000000", "reference", "x"),
    "exact": _L("exact posterior", "#000000", "reference", "x"),
    "kalman": _L("Kalman filter", "#000000", "reference", "x", "dash"),
    "batch": _L("batch posterior", "#555555", "reference", "circle-open", "dot"),
    "mcmc": _L("MCMC (NUTS)", "#555555", "reference", "circle-open", "dot"),
}

_ALIASES = {
    "sr-vn": "srvn", "gd (m, c)": "gd-mc", "gd (m, v)": "gd-mv", "bw-gd": "bwgd", "fb-gvi": "fbgvi",
    "adam-natural": "nadam", "natural adam": "nadam", "natural-gradient adam": "nadam", "proxgenadam": "pga",
    "kl(q||p)": "kl", "kl(q‖p)": "kl", "kl(p||q)": "forward_kl", "kl(p‖q)": "forward_kl", "forward kl": "forward_kl",
    "score-based": "score", "weighted fisher": "weighted_fisher", "batch and match": "bam", "gaussian score matching": "gsm",
    "kalman filter": "kalman", "batch posterior": "batch", "nuts": "mcmc", "mcmc": "mcmc", "exact": "exact",
    "euclidean (m, v)": "gd-mv", "euclidean (m, c)": "gd-mc",
    "euclidean (kappa)": "gd-mv", "natural (kappa)": "kappa", "natural (xi)": "xi", "natural (lambda)": "lambda",
}
_BY_LABEL = {lk.label.lower(): k for k, lk in LOOKS.items()}

# names with no entry: a stable colour from the name (the same on every page), neutral hues
_SPARE = ["#4D4D4D", "#999933", "#882255", "#44AA99", "#117733", "#332288", "#AA4499", "#DDCC77"]
_SPARE_SYMBOLS = ["circle", "square", "diamond", "triangle-up", "triangle-down", "x", "star", "pentagon"]


def _key(name: str) -> str | None:
    n = re.sub(r"\s+", " ", str(name).strip().lower())
    if n in LOOKS:
        return n
    if n in _ALIASES:
        return _ALIASES[n]
    if n in _BY_LABEL:
        return _BY_LABEL[n]
    return None


# The online grid of Jones, Chang & Murphy: algorithm-approximation-family[-rank], e.g. bong-lin-hess-fc.
# Colour: the algorithm; dash: the family; marker: the curvature approximation.
_ONLINE = re.compile(r"^(bong|blr|bog|bbb)-(mc-hess|mc-ef|lin-hess|lin-ef)-(fc_mom|fc|diag_mom|diag|dlr)(?:-(\d+))?$")
_ONLINE_ALGO = {"bong": ("BONG", "#0072B2"), "blr": ("BLR", "#009E73"), "bog": ("BOG", "#CC79A7"),
                "bbb": ("BBB", "#D55E00")}
_ONLINE_APPROX = {"mc-hess": ("sampled Hessian", "circle"), "mc-ef": ("sampled empirical Fisher", "square"),
                  "lin-hess": ("linearised Hessian", "diamond"), "lin-ef": ("linearised empirical Fisher", "triangle-up")}
_ONLINE_FAMILY = {"fc": ("full covariance", "solid"), "fc_mom": ("full covariance, moment form", "dash"),
                  "diag": ("diagonal", "dot"), "diag_mom": ("diagonal, moment form", "dashdot"),
                  "dlr": ("diagonal + low rank", "longdash")}


def _online_look(code: str) -> Look | None:
    m = _ONLINE.match(code)
    if m is None:
        return None
    algo, approx, fam, rank = m.groups()
    (a, col), (ap, sym), (f, dash) = _ONLINE_ALGO[algo], _ONLINE_APPROX[approx], _ONLINE_FAMILY[fam]
    if rank:
        f = f"{f} (rank {rank})"
    return Look(f"{a}, {ap}, {f}", col, dash, sym, "natural")


def method_of(name) -> str | None:
    """The method a trace name or legend group stands for (its code), or None.

    Accepts a code, a label, or a label with a suffix such as "SR-VN (120 steps)", "VN: diverged" or
    "BW-GD from (0, 1)"."""
    if not isinstance(name, str) or not name.strip():
        return None
    n = name.strip()
    if n.lower().endswith(" flow"):  # a flow is drawn in the look of the method whose limit it is
        n = n[: -len(" flow")]
    for cut in (None, " (", ": ", " from ", ", "):
        head = n if cut is None else n.split(cut, 1)[0]
        k = _key(head)
        if k is not None:
            return k
        if _ONLINE.match(head.strip().lower()):
            return head.strip().lower()
    return None


def look(name: str) -> Look:
    """The :class:`Look` of a method given by its code or its label (case-insensitive).

    A name without an entry keeps its own text as label and gets a colour and marker chosen from a
    hash of the name: stable across pages and sessions."""
    k = _key(name)
    if k is not None:
        return LOOKS[k]
    online = _online_look(str(name).strip().lower())
    if online is not None:
        return online
    h = zlib.crc32(str(name).strip().lower().encode())
    return Look(str(name), _SPARE[h % len(_SPARE)], "solid", _SPARE_SYMBOLS[(h // 7) % len(_SPARE_SYMBOLS)], "other")


def label(name: str) -> str:
    """The readable name of a method (its code when it has none)."""
    return look(name).label


def line(name: str, width: float = 2.5, **kw) -> dict:
    """Plotly ``line`` dict (colour and dash) of a method."""
    lk = look(name)
    return dict(color=lk.color, dash=lk.dash, width=width, **kw)


def marker(name: str, size: float = 9, **kw) -> dict:
    """Plotly ``marker`` dict (colour and symbol) of a method."""
    lk = look(name)
    return dict(color=lk.color, symbol=lk.symbol, size=size, **kw)


# ---------------------------------------------------------------------------------------------
# The template: the same in both modes, at screen sizes or at projector sizes.

FONT_PX = 14  # normal mode: base text; ticks one px smaller
LECTURE_FONT_PX = 20  # lecture mode: every text >= 18 px
_AXIS_TEXT = "#1a1a1a"


def _make(font_px: int) -> go.layout.Template:
    tick = font_px - 1 if font_px < 18 else max(18, font_px - 1)
    base = pio.templates["plotly_white"]
    t = go.layout.Template(base)
    axis = dict(tickfont=dict(size=tick, color=_AXIS_TEXT), title=dict(font=dict(size=font_px + 1, color=_AXIS_TEXT)),
                linecolor="#444444", showline=True, gridcolor="#e3e3e3", zerolinecolor="#bbbbbb", automargin=True)
    t.layout.update(
        font=dict(size=font_px, color=_AXIS_TEXT, family="Source Sans Pro, Arial, sans-serif"),
        title=dict(font=dict(size=font_px + 2, color=_AXIS_TEXT)),
        legend=dict(font=dict(size=font_px, color=_AXIS_TEXT), bgcolor="rgba(255,255,255,0.85)"),
        hoverlabel=dict(font=dict(size=max(font_px, 13))),
        xaxis=axis, yaxis=axis,
        coloraxis=dict(colorbar=dict(tickfont=dict(size=tick, color=_AXIS_TEXT))),
        # the toolbar appears on hover only, on the right edge, away from the legend (above the plot, left)
        modebar=dict(orientation="v", bgcolor="rgba(255,255,255,0.6)"),
    )
    t.layout.annotationdefaults = dict(font=dict(size=font_px, color=_AXIS_TEXT))
    return t


TEMPLATE = "vilab"
LECTURE_TEMPLATE = "vilab_lecture"
pio.templates[TEMPLATE] = _make(FONT_PX)
pio.templates[LECTURE_TEMPLATE] = _make(LECTURE_FONT_PX)


def template(lecture: bool = False) -> str:
    """Name of the registered Plotly template for normal or lecture mode."""
    return LECTURE_TEMPLATE if lecture else TEMPLATE


# Jones, Chang & Murphy App. D and E.6 (vilab.online.batch): batch BLR in BLR's green, the implicit RVGA in a blue
# beside BONG's (both natural-gradient methods, solid).
LOOKS.update({
    "batch-blr": _L("batch BLR", "#009E73", "natural", "square"),
    "implicit-rvga": _L("implicit RVGA", "#56B4E9", "natural", "diamond"),
})
_BY_LABEL.update({LOOKS[k].label.lower(): k for k in ("batch-blr", "implicit-rvga")})
