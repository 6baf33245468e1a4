"""Slide export (vilab.plots.export): PNG, SVG, HTML and GIF files made from real vilab figures are valid.

The figures are the Trajectories page's: the paths figure and its animation, from a short run of three
methods. PNG, SVG and GIF need Chromium (kaleido drives it); without one these tests skip, except in CI,
which installs it (scripts/ensure_chromium.sh) and where a missing Chromium is an error.
"""

from __future__ import annotations

import io
import json
import os
import re
import xml.etree.ElementTree as ET

import plotly.io as pio
import pytest

from vilab import algorithms, targets
from vilab.plots import export
from vilab.plots import trajectories as tp

REASON = export.unavailable_reason()
if REASON is not None and os.environ.get("CI"):
    raise RuntimeError("PNG/SVG/GIF export needs Chromium and kaleido in CI "
                       "(scripts/ensure_chromium.sh, make install): " + REASON)
needs_chromium = pytest.mark.skipif(REASON is not None, reason=f"no Chromium or kaleido here: {REASON}")


@pytest.fixture(scope="module")
def runs():
    t = targets.gaussian_2d(0.8, 1.0, 2.0)
    start = ((2.0, -2.0), ((1.0, 0.0), (0.0, 1.0)))
    traces = {m: algorithms.run(m, t, start, 40, 0.2) for m in ("vn", "gd-mv", "srvn")}
    return t, traces


@pytest.fixture(scope="module")
def paths(runs):
    t, traces = runs
    return tp.paths_figure(traces, truth=(t.mean, t.cov), title="Mean paths on a correlated Gaussian")


@pytest.fixture(scope="module")
def anim(runs):
    t, traces = runs
    return tp.animation_figure(traces, truth=(t.mean, t.cov), n_frames=12, frame_ms=70, title="The ellipses move")


def test_html_inlines_plotly_and_carries_the_figure(paths, anim):
    page = export.to_html(anim).decode("utf-8")
    assert page.lstrip().lower().startswith("<html") or page.lstrip().lower().startswith("<!doctype")
    assert not re.search(r"<script[^>]*\ssrc\s*=", page, re.IGNORECASE)  # no script fetched from anywhere
    assert "Plotly.newPlot" in page and len(page) > 1_000_000  # plotly.js itself is inside (several MB)
    assert "The ellipses move" in page and "<title>The ellipses move</title>" in page
    assert '"frames"' in page or "addFrames" in page  # the animation's frames travel with it
    assert "θ₁" in page or "\\u03b8\\u2081" in page  # the axis title
    # the paths figure's data: the first method's mean path, in full
    p = export.to_html(paths).decode("utf-8")
    assert "Mean paths on a correlated Gaussian" in p and "SR-VN" in p


def test_frame_duration_and_frames_follow_the_animation(anim):
    assert export.frame_duration_ms(anim) == 70
    stills = export.gif_frames(anim)
    n = len(anim.frames)
    assert n >= 5 and len(stills) == n
    assert all("updatemenus" not in s["layout"] for s in stills)  # no Play button in a GIF
    # each still carries its frame's traces: the last frame's path is the full run
    idx = anim.frames[-1].traces
    last = json.loads(pio.to_json(anim))["frames"][-1]["data"]
    assert stills[-1]["data"][idx[0]]["x"] == last[0]["x"] and stills[-1]["data"][idx[-1]] == last[-1]
    assert stills[0]["data"][idx[0]]["x"] != last[0]["x"]
    assert stills[-1]["layout"]["sliders"][0]["active"] == n - 1  # the slider shows which iteration
    few = export.gif_frames(anim, max_frames=4)
    assert len(few) == 4 and few[-1]["layout"]["sliders"][0]["active"] == n - 1  # first and last kept
    with pytest.raises(ValueError, match="between 2 and"):
        export.gif_frames(anim, max_frames=500)


def test_bad_input_is_explained(paths):
    with pytest.raises(ValueError, match="Plotly figure"):
        export.to_html("not a figure")
    with pytest.raises(ValueError, match="no animation frames"):
        export.gif_frames(paths)
    with pytest.raises(ValueError, match="between 100 and 4000"):
        export.to_png(paths, width=50)
    with pytest.raises(ValueError, match="largest export"):
        export.to_png(paths, width=4000, height=4000, scale=4)


@needs_chromium
def test_png_is_a_slide_sized_image(paths):
    from PIL import Image

    data = export.to_png(paths)
    im = Image.open(io.BytesIO(data))
    im.load()
    assert im.format == "PNG"
    assert im.size == (export.SLIDE_WIDTH * export.PNG_SCALE, export.SLIDE_HEIGHT * export.PNG_SCALE)
    # not blank: the methods' colours are in it
    colours = im.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50


@needs_chromium
def test_svg_parses_with_the_axis_titles_as_text(paths):
    data = export.to_svg(paths)
    root = ET.fromstring(data)
    assert root.tag.endswith("svg")
    texts = " ".join(t for el in root.iter() for t in [el.text] if t)
    assert "θ₁" in texts and "θ₂" in texts and "Mean paths on a correlated Gaussian" in texts
    assert "SR-VN" in texts  # the legend


@needs_chromium
def test_gif_has_one_image_per_frame_and_loops(anim):
    from PIL import Image

    data = export.to_gif(anim, width=640, height=360)
    im = Image.open(io.BytesIO(data))
    assert im.format == "GIF" and im.size == (640, 360)
    assert im.n_frames > 1 and im.n_frames <= len(anim.frames)
    assert im.info.get("loop") == 0
    assert im.info.get("duration") == 70
    im.seek(im.n_frames - 1)  # every frame decodes
    im.convert("RGB")


@needs_chromium
def test_lecture_style_is_kept_in_the_export(paths):
    """A lecture-mode figure exports with its large text: the SVG's tick labels are >= 18 px."""
    import copy

    from vilab import plots

    fig = plots.lecture_style(copy.deepcopy(paths))
    root = ET.fromstring(export.to_svg(fig))
    sizes = []
    for el in root.iter():
        style = el.get("style") or ""
        for part in style.split(";"):
            if part.strip().startswith("font-size"):
                sizes.append(float(part.split(":")[1].strip().rstrip("px")))
    assert sizes and min(sizes) >= 18


def test_without_chromium_images_say_what_to_install_and_html_still_works(paths, anim, monkeypatch, tmp_path):
    monkeypatch.setenv("VILAB_CHROMIUM", str(tmp_path / "no-such-browser"))
    assert export.chromium_path() is None and not export.can_render()
    assert "need Chromium" in export.unavailable_reason()
    with pytest.raises(export.ExportUnavailable, match="HTML export works without it"):
        export.to_png(paths)
    with pytest.raises(export.ExportUnavailable):
        export.to_gif(anim)
    assert b"Plotly.newPlot" in export.to_html(paths)


@needs_chromium
def test_several_svgs_in_one_go(paths, anim):
    """A deck's handout draws its figures in one call: one SVG per figure, each with its own axis titles."""
    import plotly.graph_objects as go

    svgs = export.to_svgs([paths, go.Figure(paths).update_layout(title="Second")], 800, 450)
    assert len(svgs) == 2 and all(ET.fromstring(s).tag.endswith("svg") for s in svgs)
    assert b"Second" in svgs[1] and b"Second" not in svgs[0]
    assert export.to_svgs([]) == []
    with pytest.raises(ValueError, match="between 100 and 4000"):
        export.to_svgs([paths], 50, 450)


@needs_chromium
def test_html_to_pdf_prints_every_page_and_fetches_nothing():
    """A print-ready document: one PDF page per page break; an image it would fetch from the network (here a server
    on this machine, which counts what it is asked) is not fetched: nothing leaves the server."""
    import http.server
    import threading

    asked = []

    class Counting(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the standard library's name
            asked.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        img = f"<img src='http://127.0.0.1:{srv.server_address[1]}/x.png'>"
        pages = "".join(f'<section style="break-after: page">Page {i} {img}</section>' for i in range(1, 3))
        pdf = export.html_to_pdf(f"<html><body>{pages}<section>Page 3</section></body></html>")
    finally:
        srv.shutdown()
    assert pdf.startswith(b"%PDF-")
    assert len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", pdf)) == 3
    assert not asked, asked


def test_html_to_pdf_without_chromium_says_what_to_install(monkeypatch):
    monkeypatch.setenv("VILAB_CHROMIUM", "/nonexistent/chromium")
    with pytest.raises(export.ExportUnavailable, match="need Chromium"):
        export.html_to_pdf("<p>x</p>")
