"""The papers' own text, for conformance tests that compare against it rather than against the project's copy.

The papers sit beside the repository, in ../shared/papers (here and in CI). Where the folder is absent, a test
that needs a paper's text is skipped with a message saying where it looked.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

PAPERS = Path(__file__).resolve().parents[2].parent / "shared" / "papers"


@cache
def _read(number: str) -> str | None:
    found = sorted(PAPERS.glob(f"{number}_*.txt")) if PAPERS.is_dir() else []
    return found[0].read_text(encoding="utf-8") if found else None


def paper(number: str) -> str:
    """The text of paper `number` ("000", "002", "003", "004"); skips the test when it is not there."""
    text = _read(number)
    if text is None:
        pytest.skip(f"paper {number} not found in {PAPERS} (the papers sit beside the repository in ../shared/papers)")
    return text


def flat(text: str) -> str:
    """Whitespace collapsed and typographic quotes made plain, so a quote and its copy compare equal."""
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return " ".join(text.split())


def between(text: str, start: str, end: str) -> str:
    """The paper's text from `start` through `end` (both included, first match), flattened."""
    m = re.search(re.escape(start) + r".*?" + re.escape(end), text, re.S)
    assert m, f"the paper has no passage from {start[:40]!r} to {end[:40]!r}"
    return flat(m.group(0))
