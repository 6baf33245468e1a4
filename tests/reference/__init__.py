"""Brute-force reference implementations used only by the tests."""
