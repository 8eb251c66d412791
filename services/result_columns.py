"""What the pages read of a batch item's stored result, kept in columns of its own when the result is written.

A result holds every round with its sentences, reasons and evidence (5-9 KB an item), but the pages need a few
values of it: the Judges page the evidence checker's prediction and verdict, the Meta-evaluation page the first
round's summary verdict and its sentences' verdicts. Reading those out of every result (decoded in Python, or
parsed by the database) was most of those pages' time and memory at 50,000 items. So the batch worker writes them
next to the result (`columns`), the migration that added the columns filled them in for results written before,
and a row without them (`verdicts` NULL: written some other way) is read from its result, by the same rules
(`checker_parts` here, db.judges.CHECKER_PARTS in the database).

  verdicts       the first round's sentence verdicts, a letter each in order: c (consistent), i (inconsistent),
                 u (unknown or none)
  consistent     the first round's model_is_consistent: 1 or 0 (its truth), -1 when it is undecided (null),
                 NULL when the round has none
  checker_score  the evidence checker's prediction: its calibrated checker_score (on the item, else on the first
                 round), else the mean of the first round's sentences' evidence support; NULL when none
"""

from __future__ import annotations

from typing import Any

import numpy as np

from services.dcr.results import CONSISTENT_AT

LETTERS = {"consistent": "c", "inconsistent": "i"}  # anything else (unknown, none) is "u"
VERDICTS = {"c": "consistent", "i": "inconsistent", "u": "unknown"}


def _number(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) else None


def checker_parts(result: dict | None) -> tuple:
    """(checker_score, round_checker, support, flag, round_score) of a decoded result: the item's own
    checker_score, the first round's, the mean support of its sentences (only when neither score is there),
    its model_is_consistent (1, 0, -1 for null, None when absent) and its score; numbers only (True counts 1)."""
    rounds = (result or {}).get("rounds") or []
    first = rounds[0] if rounds else {}
    top = _number((result or {}).get("checker_score"))
    own = _number(first.get("checker_score"))
    support = None
    if top is None and own is None:
        values = [
            s["evidence"]["support"]
            for s in first.get("sentences") or []
            if isinstance(s.get("evidence"), dict) and isinstance(s["evidence"].get("support"), int | float)
        ]
        support = float(np.mean(values)) if values else None
    if "model_is_consistent" not in first:
        flag = None
    else:
        flag = -1 if first["model_is_consistent"] is None else int(bool(first["model_is_consistent"]))
    return top, own, support, flag, _number(first.get("score"))


def _present(v: Any) -> bool:
    return v is not None and v == v  # NaN (a database's NULL through pandas) is absent too


def evidence_score(parts: tuple) -> float:
    """The evidence checker's prediction: checker_score when the result has one (on the item or its first
    round), else the mean sentence support; NaN when none."""
    for v in parts[:3]:
        if _present(v):
            return float(v)
    return np.nan


def evidence_verdict(parts: tuple) -> float:
    """The evidence checker's own summary verdict (1, 0, NaN when undecided): the first round's
    `model_is_consistent`, which can decide a summary with an undecided sentence; for a result stored before it
    had one, Eq. 3's score (1 when every sentence is consistent, NaN when a sentence was left unknown).

    Its batch item's `score` is the calibrated probability instead, which never reaches 1."""
    flag, score = parts[3], parts[4]
    if _present(flag):
        return np.nan if int(flag) < 0 else float(int(flag))
    return float(float(score) >= CONSISTENT_AT) if _present(score) else np.nan


def columns(result: dict | None) -> dict[str, Any]:
    """The columns written next to a result (see the module's docstring); all None without a result."""
    if not isinstance(result, dict):
        return {"verdicts": None, "consistent": None, "checker_score": None}
    rounds = result.get("rounds") or []
    first = rounds[0] if rounds and isinstance(rounds[0], dict) else {}
    sentences = first.get("sentences") or []
    parts = checker_parts(result)
    score = evidence_score(parts)
    return {
        "verdicts": "".join(LETTERS.get(s.get("verdict") if isinstance(s, dict) else None, "u") for s in sentences),
        "consistent": parts[3],
        "checker_score": None if np.isnan(score) else score,
    }
