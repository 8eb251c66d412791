"""The items a study rates: bundled samples, or read from JSONL/CSV with imported oracle scores."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from services.config import PROJECT_ROOT
from services.conseval.scales import parse_score, scale
from services.text import InputError, read_records

SAMPLES_FILE = PROJECT_ROOT / "samples" / "conseval.json"


@dataclass(frozen=True)
class ItemIn:
    criterion: str
    query: str
    response: str
    source_id: str = ""
    oracle_score: float | None = None
    oracle_scale: str | None = None
    # more imported oracles (columns `score:NAME`), on `oracle_scale`: (name, score) pairs
    more_scores: tuple[tuple[str, float], ...] = ()


def load_sample_items() -> dict[str, list[dict[str, Any]]]:
    """The bundled items per criterion (written for the app)."""
    return json.loads(SAMPLES_FILE.read_text(encoding="utf-8"))


def sample_items(criteria: Iterable[str], per_criterion: int | None = None) -> list[ItemIn]:
    """Bundled items of these criteria (the first `per_criterion` of each)."""
    data = load_sample_items()
    out: list[ItemIn] = []
    for c in criteria:
        rows = data.get(c, [])
        if not rows:
            raise InputError(f"No bundled items for {c!r}; upload items for it (JSONL or CSV).")
        for r in rows[: per_criterion or None]:
            out.append(ItemIn(c, r["query"], r["response"], r.get("id", "")))
    return out


def read_items(
    data: bytes | str, filename: str, *, criteria: list[str], score_scale: str | None = None
) -> list[ItemIn]:
    """Items from JSONL or CSV with `query`, `response`, optional `criterion`, optional `score` (or `human_score`,
    `oracle_score`) on `score_scale`, and optional `score:NAME` columns, one per further oracle (e.g. `score:gpt-4`,
    `score:gemini`). A row without a criterion goes to every criterion of the study."""
    rows = read_records(data, filename)
    if not rows:
        raise InputError(f"{filename}: no rows.")
    missing = [c for c in ("query", "response") if c not in rows[0]]
    if missing:
        raise InputError(f"{filename}: missing column(s) {', '.join(missing)}; need query, response.")
    sc = scale(score_scale) if score_scale else None
    out: list[ItemIn] = []
    for n, r in enumerate(rows, 1):
        q, resp = str(r.get("query") or "").strip(), str(r.get("response") or "").strip()
        if not q or not resp:
            raise InputError(f"{filename} row {n}: empty query or response.")
        raw_score = next((r[k] for k in ("score", "oracle_score", "human_score") if r.get(k) not in (None, "")), None)

        def read(raw: Any, n: int = n) -> float:
            if sc is None:
                raise InputError(f"{filename} has scores: say on which scale they are.")
            parsed = parse_score(str(raw), sc)
            if parsed.value is None:
                raise InputError(f"{filename} row {n}: score {raw!r} cannot be used on {sc.key}: {parsed.problem}.")
            return parsed.value

        value = None if raw_score is None else read(raw_score)
        more = tuple(
            (str(k).split(":", 1)[1].strip(), read(v))
            for k, v in r.items()
            if str(k).startswith("score:") and str(k).split(":", 1)[1].strip() and v not in (None, "")
        )
        crit = str(r.get("criterion") or "").strip()
        targets = [crit] if crit else criteria
        if crit and crit not in criteria:
            continue
        for c in targets:
            scored = value is not None or bool(more)
            out.append(ItemIn(c, q, resp, str(r.get("id") or n), value, sc.key if scored else None, more))
    if not out:
        raise InputError(f"{filename}: no row is for the chosen criteria ({', '.join(criteria)}).")
    return out


def limit_items(items: list[ItemIn], per_criterion: int | None) -> list[ItemIn]:
    """The first `per_criterion` items of each criterion (all when None or 0)."""
    if not per_criterion:
        return items
    seen: dict[str, int] = {}
    out = []
    for it in items:
        seen[it.criterion] = seen.get(it.criterion, 0) + 1
        if seen[it.criterion] <= per_criterion:
            out.append(it)
    return out
