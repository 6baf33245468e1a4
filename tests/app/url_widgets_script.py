"""A tiny Streamlit script using every vilab_ui widget (driven by tests/app/test_pages.py)."""

import vilab_ui as ui

ui.page("URL widgets")
ui.slider("float slider", "fs", 0.0, 1.0, 0.5)
ui.slider("int slider", "is", 1, 10, 3)
ui.log_slider("log slider", "ls", 1e-4, 1.0, 1e-2)
ui.select("select", "se", ["a", "b", "c"], "b")
ui.radio("radio", "ra", ["x", "y"], "x")
ui.multiselect("multi", "ms", ["p", "q", "r"], ["p"])
ui.number("number", "nu", 0.0, 100.0, 10.0)
ui.toggle("toggle", "to", False)
ui.checkbox("checkbox", "cb", True)
ui.text("text", "tx", "hello")


@ui.explain("Notes")
def notes():
    import streamlit as st

    st.markdown("The notes, written only while they are open.")


with ui.guard("demo"):
    raise ValueError("a clear message for the student")
