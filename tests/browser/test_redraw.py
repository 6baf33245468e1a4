"""A redraw draws once (issue 15, instant redraw): the figure a page sends (vilab.plots.spec.browser_spec) gives
the same picture as the figure itself, in Plotly.js; a JSON copy of it (what Streamlit hands Plotly right after
mounting a chart) does not make Plotly draw again; and in the live app a slider change draws the main figure
once, at the width the browser reported."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

import vilab_ui as ui
from tests.browser import layout
from tests.browser.layout import wait_rendered

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

# newPlot, then Plotly.react with a JSON copy of the same figure: did Plotly compute every trace again (a new
# gd.calcdata, and with it a new drawing)?
COPY_JS = """async (spec) => {
  const gd = document.createElement('div'); document.body.appendChild(gd);
  await Plotly.newPlot(gd, spec.data, spec.layout, {});
  const calc = gd.calcdata;
  const copy = JSON.parse(JSON.stringify(spec));
  await Plotly.react(gd, copy.data, copy.layout, {});
  const recalculated = gd.calcdata !== calc;
  Plotly.purge(gd); gd.remove(); return recalculated;
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
    vilab_ui.chart._SPECS = None  # no figure sent from an earlier test's store: every one is built and recorded
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
    from vilab.plots.spec import browser_spec

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


def test_a_copy_of_the_sent_figure_is_not_computed_again(plotly_page):
    from vilab.plots.spec import browser_spec

    for fig in _every_kind():
        assert plotly_page.evaluate(COPY_JS, json.loads(json.dumps(browser_spec(fig)))) is False
        # the figure as Plotly's own JSON (template, binary arrays) is computed again: what browser_spec saves
        assert plotly_page.evaluate(COPY_JS, json.loads(fig.to_json())) is True


# Note every new main figure: the width it was drawn at, and whether Plotly computed it again after its first
# drawing. vilab's chart element draws each new figure into the same graph div (Plotly.react: noted when done);
# Streamlit's own chart mounts a new one per figure and hands it a copy a moment later (a second Plotly.react).
HOOK_JS = """() => { window.__charts = [];
  const seen = new WeakSet();
  const note = (gd, calc) => { const rec = {gd: gd, width: gd.layout && gd.layout.width, calc: calc};
                               window.__charts.push(rec); return rec; };
  const attach = () => document.querySelectorAll('.st-key-main_figure .js-plotly-plot').forEach(gd => {
     if (seen.has(gd) || !gd.on) return; seen.add(gd);
     let rec = note(gd, null);
     gd.on('plotly_afterplot', () => { if (rec.calc === null) rec.calc = gd.calcdata; });
     if (gd.classList.contains('vilab-chart')) gd.on('plotly_react', () => { rec = note(gd, gd.calcdata); });
  });
  new MutationObserver(attach).observe(document.body, {subtree: true, childList: true}); attach(); }"""
LAST_JS = """() => { const r = window.__charts[window.__charts.length - 1];
    return {width: r.width || null, recalculated: r.gd.calcdata !== r.calc, shownWidth: r.gd.layout.width}; }"""


def test_a_slider_change_draws_the_figure_once_at_its_width(server, browser):
    page, errors = layout.open_page(browser, server, "Vector_fields", 1280, 900, lecture=False)
    page.wait_for_function("() => document.querySelector('.st-key-main_figure .js-plotly-plot .main-svg') !== null",
                           timeout=120_000)
    page.evaluate(HOOK_JS)
    thumb = page.locator('.st-key-na [data-testid="stSlider"] input[type="range"]').first
    drawn_width = page.evaluate("() => document.querySelector('.st-key-main_figure .js-plotly-plot').layout.width")
    assert drawn_width and drawn_width > 100
    charts: list[dict] = []  # the newest chart after each change
    deadline = time.time() + 180
    while time.time() < deadline and len([c for c in charts if c["width"]]) < 3:
        n = page.evaluate("() => window.__charts.length")
        thumb.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"() => window.__charts.length > {n} && window.__charts[window.__charts.length - 1].calc !== null",
                               timeout=120_000)
        wait_rendered(page)
        page.wait_for_timeout(1500)  # Streamlit's second Plotly.react comes within this
        charts.append(page.evaluate(LAST_JS))
    # once the browser has reported the width (a moment after the first drawing), every new figure comes with it,
    # is drawn at it and is not computed again
    sized = [c for c in charts if c["width"]]
    assert len(sized) >= 3, charts
    assert all(c["width"] == c["shownWidth"] == drawn_width for c in sized), (drawn_width, charts)
    assert not any(c["recalculated"] for c in sized), charts
    assert not errors, errors
    page.close()


MARGINS_JS = """() => { const gd = document.querySelector('.st-key-main_figure .js-plotly-plot');
    const m = gd.layout.margin || {}, s = gd._fullLayout._size;
    return {given: [m.l, m.r, m.t, m.b], drawn: [s.l, s.r, s.t, s.b], rev: gd.layout.datarevision}; }"""


def test_a_new_visitor_gets_the_main_figure_with_the_margins_it_was_drawn_with(server, browser):
    """The first visitor's browser reports the margins Plotly's automargin ended with; the next visitor's main
    figure (the same revision) comes with them, so Plotly draws it once and the picture has the same margins."""
    first, errors = layout.open_page(browser, server, "Flows_and_guarantees", 1280, 900, lecture=False)
    one = first.evaluate(MARGINS_JS)
    assert one["rev"].startswith("vilab:")
    first.wait_for_timeout(2500)  # the width reporter's next round (every 0.7 s) reaches the server
    second, errors2 = layout.open_page(browser, server, "Flows_and_guarantees", 1280, 900, lecture=False)
    two = second.evaluate(MARGINS_JS)
    assert two["rev"] == one["rev"]
    assert two["given"] == pytest.approx(one["drawn"], abs=0.5)  # sent with the margins the first drawing ended with
    assert two["drawn"] == pytest.approx(two["given"], abs=0.5)  # and Plotly had nothing to grow
    assert one["given"] != one["drawn"]  # the first drawing grew them (a legend below the plot, tick labels)
    assert not errors and not errors2, (errors, errors2)
    first.close()
    second.close()


def test_a_slider_change_sends_the_new_figure_with_the_margins_the_last_one_needed(server, browser):
    """A figure no browser has drawn yet (the time horizon moved to new values) is sent with the margins the
    chart's last figure needed (its labels and legend), not its own small ones: Plotly mostly has nothing to grow
    (one drawing instead of two or three) and never keeps more than a figure needed."""
    page, errors = layout.open_page(browser, server, "Flows_and_guarantees", 1280, 900, lecture=False)
    thumb = page.locator('.st-key-T [data-testid="stSlider"] input[type="range"]').first
    seen = []
    for _ in range(4):
        page.wait_for_timeout(1500)  # the width reporter's next round (every 0.7 s) reaches the server
        rev = page.evaluate(MARGINS_JS)["rev"]
        thumb.focus()
        page.keyboard.press("ArrowLeft")
        page.wait_for_function(f"() => {{ const gd = document.querySelector('.st-key-main_figure .js-plotly-plot');"
                               f" return gd && gd.layout.datarevision !== {rev!r} && gd._fullLayout._size; }}",
                               timeout=120_000)
        wait_rendered(page)
        seen.append(page.evaluate(MARGINS_JS))
    # the figure's own margins are far too small for its legend below the plot (Plotly grows the bottom one by
    # 150 px): a figure sent with them is drawn again; sent with the last one's, most are drawn once
    assert sum(s["drawn"] == pytest.approx(s["given"], abs=0.5) for s in seen) >= 2, seen
    # never more than the last figure was drawn with, plus the slack (and a few px: the need is read without
    # Plotly's coupling of the top and bottom margins through a legend placed in fractions of the plot's height)
    tol = ui.chart.MARGIN_HINT_SLACK_PX + 6
    assert all(g <= d + tol for a, b in zip(seen, seen[1:]) for g, d in zip(b["given"], a["drawn"])), seen
    assert not errors, errors
    page.close()


MAIN_GD = "document.querySelector('.st-key-main_figure .js-plotly-plot')"


def test_charts_are_drawn_by_vilabs_element_with_plotlys_cartesian_bundle(server, browser):
    """The main figure is vilab's chart element, drawn with plotly.js's cartesian bundle (not Streamlit's full one),
    at the width of its place; it follows a narrower window, and its Full screen button fills the screen with it."""
    page, errors = layout.open_page(browser, server, "Trajectories", 1280, 900, lecture=False)
    page.wait_for_function(f"() => {MAIN_GD} !== null && {MAIN_GD}.querySelector('.main-svg') !== null",
                           timeout=120_000)
    got = page.evaluate(f"""() => {{ const gd = {MAIN_GD};
        return {{element: gd.classList.contains('vilab-chart'), version: window.Plotly && window.Plotly.version,
                 cartesian: !!document.querySelector('script[src*="plotly-cartesian.min.js"]'),
                 width: gd._fullLayout.width, place: gd.parentElement.getBoundingClientRect().width,
                 traces: gd.data.length}}; }}""")
    assert got["element"] and got["cartesian"] and str(got["version"]).startswith("4."), got
    assert got["traces"] > 3 and abs(got["width"] - got["place"]) <= 1, got
    page.set_viewport_size({"width": 1000, "height": 900})  # a narrower window: the chart follows its place
    page.wait_for_function(f"""() => {{ const gd = {MAIN_GD};
        return Math.abs(gd._fullLayout.width - gd.parentElement.getBoundingClientRect().width) <= 1
               && gd._fullLayout.width < {got["width"]} - 20; }}""", timeout=30_000)
    button = page.locator('.st-key-main_figure .modebar-btn[data-title="Full screen"]')
    assert button.count() == 1
    page.locator(".st-key-main_figure .js-plotly-plot .nsewdrag").first.hover()  # the toolbar shows on hover
    button.click()
    page.wait_for_function(f"() => document.fullscreenElement === {MAIN_GD}", timeout=10_000)
    page.wait_for_function(f"() => Math.abs({MAIN_GD}._fullLayout.width - window.innerWidth) <= 1", timeout=10_000)
    page.evaluate("() => document.exitFullscreen()")
    page.wait_for_function(f"""() => {{ const gd = {MAIN_GD}; return !document.fullscreenElement
        && Math.abs(gd._fullLayout.width - gd.parentElement.getBoundingClientRect().width) <= 1; }}""", timeout=10_000)
    assert not errors, errors
    page.close()
