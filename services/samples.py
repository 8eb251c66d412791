"""Bundled example documents (written for the app) to try it without data of one's own."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from services.config import PROJECT_ROOT

SAMPLES_FILE = PROJECT_ROOT / "samples" / "samples.json"


@dataclass(frozen=True)
class Sample:
    id: str
    title: str
    task: str
    reference: str
    candidate: str


@lru_cache(maxsize=1)
def load_samples() -> tuple[Sample, ...]:
    """The bundled samples, in file order."""
    return tuple(Sample(**row) for row in json.loads(SAMPLES_FILE.read_text(encoding="utf-8")))
