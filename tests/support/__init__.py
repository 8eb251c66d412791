"""Helpers shared by test modules: fakes, seeds, databases, browser helpers and reference figures (no tests here)."""
