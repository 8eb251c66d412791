"""What an imported item is, and how human judgments (labels, scores, sentence votes) are read from a cell."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from services.tables import IMPORT_ADVICE  # noqa: F401  (said where files are read; named here for importers)

LABEL_KINDS = ("score", "binary", "sentence")

_TRUE = {"1", "true", "yes", "consistent"}
_FALSE = {"0", "false", "no", "inconsistent"}


@dataclass
class ImportedItem:
    """One reference/candidate pair read from a file, with whatever human judgments it carries."""

    external_id: str
    reference: str
    candidate: str
    sentences: list[str] | None = None
    human_score: float | None = None
    human_label: int | None = None  # 1 consistent / 0 inconsistent
    sentence_labels: list[dict[str, int]] | None = None  # per sentence: {rater: 1 or 0}
    extra: dict[str, Any] = field(default_factory=dict)
    system: str | None = None  # the system (prompt, model, version) that wrote the candidate, for comparisons


@dataclass(frozen=True)
class RejectedRow:
    """A row that was not imported: its 1-based row (line) number and why."""

    row: int
    reason: str


@dataclass
class ImportResult:
    """What a reader made of a file: the valid items, the rejected rows and the judgments present."""

    format: str
    task: str
    items: list[ImportedItem]
    rejected: list[RejectedRow]
    label_kinds: list[str]
    meta: dict[str, Any] = field(default_factory=dict)  # provenance, e.g. the column mapping or the variant


MAX_STORED_REJECTED = 1000  # rejected rows stored with a dataset; all are counted


@dataclass
class ImportSummary:
    """What an import read from a file, without its items (they went to the database a chunk at a time): the
    counts, the rejected rows and the judgments present."""

    format: str
    task: str
    n_items: int
    n_rejected: int
    rejected: list[RejectedRow]
    label_kinds: list[str]
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ColumnMapping:
    """Which columns (JSONL keys or CSV headers) hold what, for a generic file."""

    reference: str
    candidate: str
    id: str | None = None
    human_score: str | None = None
    human_label: str | None = None
    sentence_labels: str | None = None
    system: str | None = None  # which system (or prompt, model, version) wrote the candidate


MAX_SYSTEM = 200


def parse_system(value: Any) -> str | None:
    """A system's name from a cell: text or a number, at most MAX_SYSTEM characters; None when empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, dict | list):
        raise ValueError(f"system {str(value)[:40]!r} is not a name")
    s = str(value).strip()
    if len(s) > MAX_SYSTEM:
        raise ValueError(f"system name is longer than {MAX_SYSTEM} characters")
    return s or None


# -- value parsing -------------------------------------------------------------------------------
def parse_label(value: Any) -> int | None:
    """1/0 from 0/1, true/false, yes/no or consistent/inconsistent (any case); None when empty."""
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float) and value in (0, 1):
        return int(value)
    s = str(value).strip().lower()
    if not s:
        return None
    if s in _TRUE:
        return 1
    if s in _FALSE:
        return 0
    if s in ("1.0", "0.0"):
        return int(float(s))
    raise ValueError(f"label {value!r} is not 0/1, true/false, yes/no or consistent/inconsistent")


def parse_score(value: Any) -> float | None:
    """A finite number, or None when empty."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"score {value!r} is not a number")
    try:
        x = float(value)
    except ValueError:
        raise ValueError(f"score {value!r} is not a number") from None
    if not math.isfinite(x):
        raise ValueError(f"score {value!r} is not a finite number")
    return x


def majority_vote(votes: dict[str, int]) -> int:
    """1 when more than half of the raters say consistent (a tie counts as not consistent)."""
    return int(sum(votes.values()) * 2 > len(votes))


def parse_sentence_labels(value: Any) -> list[dict[str, int]] | None:
    """Per-sentence labels from a JSON list of 0/1, of vote lists, or of {rater: 0/1} dicts."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError("sentence labels are not a JSON list") from None
    if not isinstance(value, list):
        raise ValueError("sentence labels must be a list with one entry per sentence")
    out: list[dict[str, int]] = []
    for k, entry in enumerate(value, 1):
        if isinstance(entry, dict):
            pairs = [(str(r), v) for r, v in entry.items()]
        elif isinstance(entry, list):
            pairs = [(str(i), v) for i, v in enumerate(entry)]
        else:
            pairs = [("0", entry)]
        if not pairs:
            raise ValueError(f"sentence {k} has no label")
        votes: dict[str, int] = {}
        for rater, v in pairs:
            try:
                label = parse_label(v)
            except ValueError as exc:
                raise ValueError(f"sentence {k}: {exc}") from None
            if label is None:
                raise ValueError(f"sentence {k}: an empty label")
            votes[rater] = label
        out.append(votes)
    return out


def has_kind(item: ImportedItem, kind: str) -> bool:
    """Whether the item carries human judgments of this kind (score, binary or sentence)."""
    if kind == "score":
        return item.human_score is not None
    if kind == "binary":
        return item.human_label is not None
    return item.sentence_labels is not None
