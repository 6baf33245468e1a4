"""A deck to go (issue 37 item 4): the deck as one offline HTML file and as a PDF handout (vilab_ui/deck_export.py).

The HTML must hold every view's question, answer and figures, plotly.js itself and nothing fetched from elsewhere;
the PDF one page per view. The figures of a view are those its page draws when run with the view's settings
(computed in a worker process under AppTest): checked on two quick views."""

from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest

from vilab.plots import export
from vilab_ui import deck_export as dx
from vilab_ui import decks

HOSTILE = "<script>alert(1)</script> <img src=http://x.example/p.png>"


def _fig(title: str) -> dict:
    fig = go.Figure([go.Scatter(x=[0, 1, 2], y=[1, 0, float("nan")], name="path"),
                     go.Contour(z=[[0, 1], [1, 2]], showscale=False)])
    fig.update_layout(title=title, height=400)
    return fig.to_plotly_json()


def _deck() -> decks.Deck:
    return decks.Deck("A deck & its <figures>", (
        decks.make_view("25_Positive_definiteness", {"rho": "0.3"}, "Still a covariance?", "No: an eigenvalue < 0."),
        decks.make_view("40_Divergences", {"tab": "2-D Gaussian", "rho": "0.9"}, "Which shrinks most? " + HOSTILE,
                        "Line 1\nline 2 " + HOSTILE),
        decks.make_view("00_Home", {}, "And here?", "A map."),
    ))


def _results() -> list[dx.ViewFigures]:
    return [dx.ViewFigures(figures=(_fig("one"), _fig("one, second")), main=1),
            dx.ViewFigures(figures=(_fig("two"),), main=1),
            dx.ViewFigures(error="the page stopped with an error: something broke.")]


BASE = "http://lab.example:8501/"


def test_the_html_deck_holds_every_view_and_nothing_from_outside():
    deck, results = _deck(), _results()
    page = dx.deck_html(deck, results, BASE, lecture=True).decode("utf-8")
    for v in deck.views:
        assert f"View {deck.views.index(v) + 1} of 3: {v.title}" in page
    assert "Still a covariance?" in page and "No: an eigenvalue &lt; 0." in page
    assert "Line 1<br>line 2" in page  # the answer's lines kept
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # texts as typed
    assert "A deck &amp; its &lt;figures&gt;" in page
    assert page.count('<section class="view"') == 3
    assert page.count('class="fig') == 3  # every figure a div of its own; the failed view has none
    assert "could not be computed for the export: the page stopped with an error" in page
    # plotly.js itself, the full bundle, inlined once
    assert len(page) > 3_000_000 and page.count("plotly.js v") >= 1 and "Plotly.newPlot" in page
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.I)
    assert not re.search(r"<link\b", page, re.I)
    assert not re.search(r"@import|url\(\s*['\"]?https?:", page, re.I)
    # the figures: in a JSON block that cannot close the script early, NaN written as a gap
    block = re.search(r'<script type="application/json" id="vilab-deck-figures">(.*?)</script>', page, re.S).group(1)
    assert "</" not in block and "NaN" not in block and '"one, second"' in block
    # each view's link opens it live in the lab, the deck open at it, in the presenter's mode
    links = re.findall(r'<a class="live" href="([^"]+)"', page)
    assert len(links) == 3
    assert links[0].startswith(BASE + "Positive_definiteness?") and "dv=1" in links[0] and "deck=" in links[0]
    assert "lecture=1" in links[0] and "rho=0.3" in links[0]
    assert links[2].startswith(BASE + "?")  # the home page is the lab's address itself


def test_the_html_deck_without_a_lab_address_has_no_links():
    page = dx.deck_html(_deck(), _results(), None).decode("utf-8")
    assert 'class="live"' not in page


def test_results_must_match_the_deck():
    with pytest.raises(ValueError, match="figures for 2 views; the deck has 3"):
        dx.deck_html(_deck(), _results()[:2], BASE)


def test_the_lab_address():
    assert dx.lab_base_url("http://h:8501/Trajectories?rho=1&deck=x") == "http://h:8501/"
    assert dx.lab_base_url("https://course.example/lab/Lecture_decks") == "https://course.example/lab/"
    assert dx.lab_base_url("https://course.example/lab/") == "https://course.example/lab/"
    assert dx.lab_base_url(None) is None and dx.lab_base_url("file:///tmp/x.html") is None


def test_the_lab_address_from_the_setting(monkeypatch):
    monkeypatch.setenv(dx.PUBLIC_URL_ENV, "https://hall.example/vilab")
    assert dx.lab_base_url("http://127.0.0.1:8501/Trajectories") == "https://hall.example/vilab/"


def _pdf_pages(data: bytes) -> int:
    try:
        import pypdf
    except ImportError:
        return len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", data))
    import io

    return len(pypdf.PdfReader(io.BytesIO(data)).pages)


needs_chromium = pytest.mark.skipif(not export.can_render(), reason="PDF export needs Chromium and kaleido")


@needs_chromium
def test_the_pdf_handout_has_one_page_per_view():
    deck, results = _deck(), _results()
    pdf = dx.deck_pdf(deck, results, BASE, lecture=True)
    assert pdf.startswith(b"%PDF-")
    assert _pdf_pages(pdf) == len(deck)
    page = dx.handout_html(deck, results, BASE).decode("utf-8")
    assert page.count("<section>") == 3 and page.count('src="data:image/svg+xml;base64,') == 2
    assert "&lt;script&gt;" in page and "<script" not in page
    assert not re.search(r'src="https?:', page)


@needs_chromium
def test_a_long_deck_is_still_one_page_per_view():
    """Twenty views (a deck's most) with the longest question and answer a deck holds: still one page each."""
    view = decks.make_view("00_Home", {}, "Q" * decks.MAX_PROMPT, " ".join(["answer"] * (decks.MAX_REVEAL // 7)))
    deck = decks.Deck("Long", tuple(view for _ in range(decks.MAX_VIEWS)))
    results = [dx.ViewFigures(figures=(_fig(f"v{i}"),), main=1) for i in range(decks.MAX_VIEWS)]
    assert _pdf_pages(dx.deck_pdf(deck, results)) == decks.MAX_VIEWS


def test_a_view_is_computed_from_its_page():
    """The worker runs each view's page with the view's settings: the figures the page draws, in lecture style when
    the deck is presented in lecture mode; progress is reported as views start and finish."""
    deck = decks.Deck("Quick", (
        decks.make_view("25_Positive_definiteness", {"mode": "single update (Cauchy example)", "rho": "0.3"}),
        decks.make_view("00_Home", {}),
    ))
    said = []
    results = dx.compute(deck, True, lambda done, n, text: said.append((done, n, text)))
    assert [r.error for r in results] == [None, None], results
    assert all(r.figures and r.main >= 1 for r in results)
    for r in results:
        font = (r.figures[0].get("layout") or {}).get("font") or {}
        assert font.get("size", 0) >= 18, font  # lecture style
    assert said[-1][0] == 2 and any("Computing view 2 of 2: Home" in t for _, _, t in said)
    assert dx.compute(deck, True) is results  # kept: the PDF after the HTML costs nothing more
