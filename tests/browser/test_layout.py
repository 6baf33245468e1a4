"""Lecture-grade layout, measured in headless Chromium on a live server (issue 14).

Every page, at 1280x720 and 1600x1000, in normal and lecture mode:
* its main figure lies inside the first viewport;
* in lecture mode the title, body text, labels and every Plotly text are >= 18 px;
* no visible element's text is clipped by its box; no exception, no JavaScript error.

Screenshots of each page (1280x720, normal and lecture) go to assets/screenshots/, where the README shows them.
"""

from __future__ import annotations

import time
from urllib.parse import urlencode

import pytest

from tests.browser import layout

pytestmark = pytest.mark.browser

if layout.chromium_path() is None:
    import os

    if os.environ.get("CI"):
        raise RuntimeError("Chromium is required for the browser tests in CI; .ci/run installs it (apt-get install chromium).")
    pytest.skip("Chromium is not installed (run `make test`, which installs it)", allow_module_level=True)

SHOTS = layout.ROOT / "assets" / "screenshots"
PAGES = [p for p, _ in layout.page_paths()]


@pytest.mark.parametrize("lecture", [False, True], ids=["normal", "lecture"])
@pytest.mark.parametrize("path", PAGES)
def test_page_is_lecture_grade(server, browser, path, lecture):
    (w0, h0), *others = layout.SIZES
    page, errors = layout.open_page(browser, server, path, w0, h0, lecture)
    problems = []
    try:
        for i, (w, h) in enumerate(layout.SIZES):
            if i:
                page.set_viewport_size({"width": w, "height": h})
                time.sleep(1.5)  # Plotly's responsive relayout
            found = layout.main_figure_problems(page) + layout.overflow_problems(page)
            if lecture:
                found += layout.font_problems(page)
            problems += [f"{w}x{h}: {p}" for p in found]
            if i == 0:
                SHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SHOTS / f"{path.lower()}{'-lecture' if lecture else ''}.png"))
        problems += layout.exception_problems(page, errors)
    finally:
        page.close()
    assert not problems, "\n".join(problems)


# the longest choice of every selectbox whose choices can be longer than its default: a choice that
# does not fit the control column is cut off (a selectbox cannot wrap)
LONG_CHOICES = [
    ("Trajectories", {"tgt": "logistic regression (T3)"}),
    ("Vector_fields", {"chart": "natural (mu/sigma^2, -1/(2 sigma^2))"}),  # shown as "natural parameters"
    ("Divergences", {"tgt": "log_inverse_gamma"}),
    ("Online_learning", {"tab": "Digits stream", "dmet": "error (linearized)"}),
    ("CNN_lab", {"model": "mlp"}),
    ("Positive_definiteness", {"tgt": "two-component mixture"}),
    ("Reproductions", {"r": "kumar2025-vn-srvn-order2"}),
]


@pytest.mark.parametrize("lecture", [False, True], ids=["normal", "lecture"])
@pytest.mark.parametrize("path,query", LONG_CHOICES, ids=[p for p, _ in LONG_CHOICES])
def test_long_choices_fit(server, browser, path, query, lecture):
    w, h = layout.SIZES[0]
    page, errors = layout.open_page(browser, server, path, w, h, lecture, urlencode(query))
    try:
        problems = layout.overflow_problems(page) + layout.exception_problems(page, errors)
    finally:
        page.close()
    assert not problems, "\n".join(problems)
