"""Two 'pages' that reuse the same short widget keys differently (driven by tests/app/test_pages.py).

Session state is shared by every page of the app; st.session_state["which"] picks the page, as the
sidebar's navigation would, and st.session_state["big"] changes a slider's bounds, as another
widget of the page would."""

import streamlit as st

import vilab_ui as ui

if st.session_state.get("which", "A") == "A":
    ui.page("Page A")
    ui.slider("r on A", "r", -1.0, 1.0, 0.5)
    ui.radio("rule on A", "rule", ["backtracking", "fixed"], "fixed")
    n_max = 100 if st.session_state.get("big") else 10
    ui.slider("n", "n", 1, n_max, n_max)
    ui.log_slider("alpha0", "al", 1e-3, 1.0, 3e-2)
else:
    ui.page("Page B")
    ui.slider("r on B", "r", 0.0, 10.0, 3.0)
    ui.toggle("rule on B", "rule", True)
