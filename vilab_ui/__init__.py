"""Streamlit helpers shared by the pages, one concern a module:

- :mod:`vilab_ui.widgets`   URL-synced widgets (every widget's value is in the page's URL), seed, lecture mode;
- :mod:`vilab_ui.stage`     the page's furniture (title, layout, "what to notice", explanations) and its CSS;
- :mod:`vilab_ui.chart`     drawing a figure (:func:`show`), figure recipes, click selection;
- :mod:`vilab_ui.messages`  errors as warnings in a student's words (:func:`guard`), run statuses;
- :mod:`vilab_ui.caching`   caches shared by every visitor.

Pages import this package as ``ui`` and use the names below.
"""

from __future__ import annotations

from vilab_ui.widgets import (
    TEXT_MAX_CHARS,
    checkbox,
    lecture,
    log_grid,
    log_slider,
    multiselect,
    number,
    radio,
    scope,
    seed,
    select,
    slider,
    tabs,
    text,
    toggle,
)
from vilab_ui.messages import Guarded, guard, plain, report_status, status_text
from vilab_ui.caching import SharedStore, cache_data, cache_resource
from vilab_ui.stage import apply_mode, columns, explain, link, more, notice, page, table
from vilab_ui.chart import MAIN_FIGURE, Recipe, click_setter, recipe, selected_point, show

__all__ = [
    "page",
    "slider",
    "log_slider",
    "select",
    "radio",
    "multiselect",
    "number",
    "toggle",
    "checkbox",
    "text",
    "seed",
    "lecture",
    "show",
    "guard",
    "more",
    "report_status",
    "log_grid",
    "selected_point",
    "click_setter",
    "scope",
    "tabs",
    "link",
    "status_text",
    "columns",
    "notice",
    "explain",
    "table",
    "apply_mode",
    "MAIN_FIGURE",
    "plain",
    "Guarded",
    "SharedStore",
    "recipe",
    "Recipe",
    "TEXT_MAX_CHARS",
    "cache_data",
    "cache_resource",
]
