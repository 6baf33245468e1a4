"""Fixtures of the browser tests: a live `streamlit run app.py` and headless Chromium, one each per module."""

from __future__ import annotations

import pytest

from tests.browser import layout


@pytest.fixture(scope="module")
def server():
    with layout.streamlit_server() as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with layout.chromium() as b:
        yield b
