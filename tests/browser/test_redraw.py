"""The figure a page sends (vilab_ui.spec.browser_spec, vilab's template written in) gives the same picture as
the figure itself, in Plotly.js; and vilab's chart element draws it with plotly.js's cartesian bundle at the size
of its place: the width of the page's column, the height the stage's CSS asks for (--vilab-chart-height), the
whole screen in full screen."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from tests.browser import layout

pytestmark = pytest.mark.browser

if layout.chromium_path() is None:
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["10_Vector_fields", "20_Trajectories", "27_Flows_and_guarantees", "40_Divergences", "70_CNN_lab"]

# the full figure Plotly computes (every default filled in), without its private and bookkeeping entries
FULL_JS = """async ([a, b]) => {
  const strip = v => {
    if (Array.isArray(v) || ArrayBuffer.isView(v)) return Array.from(v, strip);
    if (v && typeof v === 'object') { const out = {}; for (const k of Object.keys(v).sort()) {
        if (k.startsWith('_') || ['template', 'datarevision', 'uid', 'index'].includes(k) || typeof v[k] === 'function') continue;
        out[k] = strip(v[k]); } return out; }
    return v; };
  const full = async spec => { const gd = document.createElement('div'); document.body.appendChild(gd);
    await Plotly.newPlot(gd, spec.data, Object.assign({}, spec.layout, {width: 800}), {});
    const out = [JSON.stringify(strip(gd._fullLayout)), JSON.stringify(strip(gd._fullData)),
                 gd.querySelectorAll('.main-svg *').length];
    Plotly.purge(gd); gd.remove(); return out; };
  return [await full(a), await full(b)];
}"""

@pytest.fixture(scope="module")
def plotly_page(browser, tmp_path_factory):
    from plotly.offline import get_plotlyjs

    html = tmp_path_factory.mktemp("plotly") / "plotly.html"
    html.write_text(f"<html><body><script>{get_plotlyjs()}</script></body></html>")
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(html.as_uri())
    yield page
    page.close()


def _page_figures():
    """Every figure the default views of PAGES show, normal and lecture mode (AppTest, recording ui.show)."""
    from streamlit.testing.v1 import AppTest

    import vilab_ui

    figs, orig = [], vilab_ui.chart.browser_spec

    def record(fig, width=None):  # every figure ui.show styles, before it is flattened for the browser
        figs.append(go.Figure(fig))
        return orig(fig, width)

    vilab_ui.chart.browser_spec = record
    try:
        for name in PAGES:
            for lecture in (False, True):
                at = AppTest.from_file(str(ROOT / "pages" / f"{name}.py"), default_timeout=300)
                if lecture:
                    at.query_params["lecture"] = "1"
                at.run()
                assert not at.exception, (name, [e.value for e in at.exception])
    finally:
        vilab_ui.chart.browser_spec = orig
    return figs


def _every_kind():
    """One figure with every kind of trace and subplot a page might use, in vilab's templates."""
    from vilab import plots

    out = []
    for lecture in (False, True):
        f = make_subplots(2, 3, subplot_titles=list("abcdef"),
                          specs=[[{}, {}, {"type": "domain"}], [{}, {}, {"type": "polar"}]])
        z = np.random.default_rng(0).normal(size=(10, 12))
        f.add_trace(go.Contour(z=z), 1, 1)
        f.add_trace(go.Heatmap(z=z, showscale=True), 1, 2)
        f.add_trace(go.Pie(values=[1, 2, 3]), 1, 3)
        f.add_trace(go.Bar(x=[1, 2], y=[3, 4]), 2, 1)
        f.add_trace(go.Histogram(x=np.arange(20.0)), 2, 1)
        f.add_trace(go.Scatterpolar(r=[1, 2], theta=[0, 90]), 2, 3)
        for k in range(4):
            f.add_trace(go.Scatter(y=np.arange(3.0) + k, mode="lines+markers"), 1, 1)
        f.add_trace(go.Scatter(x=[1, 2], y=[2, 3], mode="markers", marker=dict(color=[1, 2], coloraxis="coloraxis")), 2, 2)
        f.add_shape(type="line", x0=0, x1=1, y0=0, y1=1)
        f.add_annotation(text="note", x=1, y=1)
        out.append(plots.lecture_style(f) if lecture else plots.style(f, title="every kind"))
    return out


def test_the_sent_figure_is_the_same_picture(plotly_page):
    from vilab_ui.spec import browser_spec

    figs = _page_figures() + _every_kind()
    assert len(figs) >= 20
    flattened = 0
    for i, fig in enumerate(figs):
        sent = json.loads(json.dumps(browser_spec(fig)))
        flattened += "template" not in sent["layout"]
        a, b = plotly_page.evaluate(FULL_JS, [json.loads(fig.to_json()), sent])
        assert a[0] == b[0], f"figure {i}: the full layout differs"
        assert a[1] == b[1], f"figure {i}: the full traces differ"
        assert a[2] == b[2], f"figure {i}: a different number of drawn elements"
    assert flattened == len(figs)  # every figure of the pages is in vilab's template, written in


MAIN_GD = "document.querySelector('.st-key-main_figure .js-plotly-plot')"


def test_charts_are_drawn_by_vilabs_element_with_plotlys_cartesian_bundle(server, browser):
    """The main figure is vilab's chart element, drawn with plotly.js's cartesian bundle (not Streamlit's full one),
    at the width of its place; it follows a narrower window, takes the height the stage's CSS custom property
    --vilab-chart-height gives it (contract C2), and its Full screen button fills the screen with it."""
    page, errors = layout.open_page(browser, server, "Trajectories", 1280, 900, lecture=False)
    page.wait_for_function(f"() => {MAIN_GD} !== null && {MAIN_GD}.querySelector('.main-svg') !== null",
                           timeout=120_000)
    size = f"""() => {{ const gd = {MAIN_GD}, svg = gd.querySelector('.main-svg');
        return {{width: svg.getBoundingClientRect().width, height: svg.getBoundingClientRect().height,
                 place: gd.parentElement.getBoundingClientRect().width}}; }}"""
    got = page.evaluate(f"""() => {{ const gd = {MAIN_GD};
        return {{element: gd.classList.contains('vilab-chart'), version: window.Plotly && window.Plotly.version,
                 cartesian: !!document.querySelector('script[src*="plotly-cartesian.min.js"]'),
                 traces: gd.data.length}}; }}""")
    assert got["element"] and got["cartesian"] and str(got["version"]).startswith("4."), got
    first = page.evaluate(size)
    assert got["traces"] > 3 and abs(first["width"] - first["place"]) <= 1, (got, first)
    page.set_viewport_size({"width": 1000, "height": 900})  # a narrower window: the chart follows its place
    page.wait_for_function(f"""() => {{ const s = ({size})();
        return Math.abs(s.width - s.place) <= 1 && s.width < {first["width"]} - 20; }}""", timeout=30_000)
    # the stage (helper C's lecture-mode CSS) sets --vilab-chart-height on the figure's container: the chart takes it
    page.add_style_tag(content=".st-key-main_figure { --vilab-chart-height: calc(70vh - 10px); }")
    page.set_viewport_size({"width": 1000, "height": 800})
    page.wait_for_function(f"() => Math.abs(({size})().height - (0.7 * 800 - 10)) <= 1", timeout=30_000)
    page.set_viewport_size({"width": 1000, "height": 700})  # and follows the window's height
    page.wait_for_function(f"() => Math.abs(({size})().height - (0.7 * 700 - 10)) <= 1", timeout=30_000)
    button = page.locator('.st-key-main_figure .modebar-btn[data-title="Full screen"]')
    assert button.count() == 1
    page.locator(".st-key-main_figure .js-plotly-plot .nsewdrag").first.hover()  # the toolbar shows on hover
    button.click()
    page.wait_for_function(f"() => document.fullscreenElement === {MAIN_GD}", timeout=10_000)
    page.wait_for_function(f"() => Math.abs(({size})().width - window.innerWidth) <= 1", timeout=10_000)
    page.evaluate("() => document.exitFullscreen()")
    page.wait_for_function(f"""() => {{ const s = ({size})(); return !document.fullscreenElement
        && Math.abs(s.width - s.place) <= 1 && Math.abs(s.height - (0.7 * 700 - 10)) <= 1; }}""", timeout=10_000)
    assert not errors, errors
    page.close()
