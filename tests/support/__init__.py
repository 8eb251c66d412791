"""Helpers shared by test modules: fakes, seeds, databases and reference figures (no tests here)."""
