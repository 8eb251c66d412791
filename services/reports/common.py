"""What the report builders share: hashes, headlines with intervals, worked examples of rounds and verdicts."""

from __future__ import annotations

import hashlib
from typing import Any

import pandas as pd

from db.redact import redact_url
from services import metaeval
from services.dcr import Round, delivered
from services.reports.model import Example, ExampleRewrite, ExampleRound, ExampleSentence, Headline

N_EXAMPLES = 3
GOLD = {1: "consistent", 0: "inconsistent"}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def as_float(x: Any) -> float | None:
    """A float, or None when missing or not a number (NaN included)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if v == v else None


def ci_headline(label: str, row: pd.Series | None, n: int | None = None) -> Headline:
    """A headline from a row with value, ci_low, ci_high and n."""
    if row is None:
        return Headline(label=label, value=None)
    return Headline(
        label=label,
        value=as_float(row.get("value")),
        ci_low=as_float(row.get("ci_low")),
        ci_high=as_float(row.get("ci_high")),
        n=int(row.get("n") or 0) if n is None else n,
    )


def rounds_example(title: str, rounds: list[Round], fields: list[tuple[str, str]]) -> Example:
    """A DCR run's rounds as a worked example; rewrites left out of the delivered text say so and why."""
    left = {(x.round, x.index): x.why for x in delivered(rounds).left_out}
    return Example(
        title=title,
        fields=fields,
        rounds=[
            ExampleRound(
                label=f"Round {r.index}" + (" (before any rewrite)" if r.index == 0 else ""),
                score=r.evaluation.score.z_hat if r.evaluation.score else None,
                sentences=[
                    ExampleSentence(text=s.text, verdict=s.verdict, reason=s.reason or s.error or "")
                    for s in r.evaluation.sentences
                ],
                rewrites=[
                    ExampleRewrite(
                        index=w.index,
                        before=w.before,
                        after=w.after,
                        reason=w.reason,
                        accepted=w.accepted,
                        left_out=left.get((r.index, w.index), ""),
                    )
                    for w in r.rewrites
                ],
            )
            for r in rounds
        ],
    )


def stored_rounds_example(title: str, rounds: list[dict[str, Any]], fields: list[tuple[str, str]]) -> Example:
    """A batch item's stored rounds (JSON) as a worked example."""
    return Example(
        title=title,
        fields=fields,
        rounds=[
            ExampleRound(
                label=f"Round {rd.get('round', i)}" + (" (before any rewrite)" if i == 0 else ""),
                score=rd.get("score"),
                sentences=[
                    ExampleSentence(
                        text=x.get("text", ""),
                        verdict=x.get("verdict") or "unknown",
                        reason=x.get("reason") or x.get("error") or "",
                    )
                    for x in rd.get("sentences") or []
                ],
                rewrites=[
                    ExampleRewrite(
                        index=w.get("index", 0),
                        before=w.get("before", ""),
                        after=w.get("after", ""),
                        reason=w.get("reason") or "",
                    )
                    for w in rd.get("rewrites") or []
                ],
            )
            for i, rd in enumerate(rounds)
        ],
    )


def verdict_text(result: dict[str, Any] | None) -> str:
    """A method's verdict on one item with its reasoning, from the stored record."""
    r = result or {}
    if "label" not in r and r.get("rounds"):
        rd = r["rounds"][0]
        lines = [
            f"#{s.get('index', i) + 1} {s.get('verdict')}: {s.get('reason') or s.get('error') or ''}"
            for i, s in enumerate(rd.get("sentences") or [])
        ]
        score = rd.get("score")
        head = "consistent" if score is not None and score >= metaeval.CONSISTENT_AT else "inconsistent"
        shown = "no verdict" if score is None else f"{head} (Ẑ = {score:.3f})"
        return shown + "\n" + "\n".join(lines)
    label = r.get("label") or "no verdict"
    parts = []
    if r.get("summary"):
        parts.append(r["summary"].get("reasoning") or r["summary"].get("error") or "")
    for w in r.get("windows") or []:
        parts.append(f"[{w.get('label') or '?'}] {w.get('text', '')} — {w.get('reasoning') or w.get('error') or ''}")
    for p in r.get("pairs") or []:
        parts.append(
            f"[{p.get('judgement') or '?'}] Q: {p.get('question')} A: {p.get('expected_answer')} — "
            f"{p.get('reasoning') or p.get('error') or ''}"
        )
    return label + ("\n" + "\n".join(x for x in parts if x) if parts else "")


def model_config(backend: str, model: str, base_url: str | None, params: dict[str, Any]) -> dict[str, Any]:
    """The model block of a report's configuration: no credential in the URL or the parameters."""
    return {
        "backend": backend,
        "model": model,
        "base_url": redact_url(base_url),
        "params": metaeval.public_params(dict(params)),
    }
