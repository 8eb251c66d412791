"""Where the judge (a model's verdict on a sentence) and the evidence (the offline checker's alignment of that
sentence with the reference) disagree: the sentences a reader should check first.

A sentence is flagged when the judge calls it consistent while the evidence calls it inconsistent or shows a
reference sentence that contradicts it (another number, name or polarity), or when the judge calls it
inconsistent while the evidence finds it supported. An unknown verdict on either side flags nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from services.dcr.evidence import SentenceEvidence


@dataclass(frozen=True)
class Disagreement:
    """One sentence the judge and the evidence disagree on, and how."""

    index: int
    text: str
    judge: str  # the judge's verdict: consistent or inconsistent
    evidence: str  # the checker's verdict
    why: str


def _contradiction(se: SentenceEvidence) -> str | None:
    e = next((e for e in se.alignments if e.role == "contradict"), None)
    if e is None:
        return None
    return f"the evidence contradicts it ({e.conflict})" if e.conflict else "the evidence contradicts it"


def disagreement(index: int, text: str, judge: str | None, se: SentenceEvidence | None) -> Disagreement | None:
    """How the judge's verdict on a sentence and its evidence disagree, or None when they do not."""
    if se is None or judge not in ("consistent", "inconsistent") or se.text != text:
        return None
    if judge == "consistent":
        contradiction = _contradiction(se)
        if contradiction is None and se.verdict != "inconsistent":
            return None
        why = contradiction or f"the evidence finds no support: {se.finding}"
    else:
        if se.verdict != "consistent" or _contradiction(se) is not None:
            return None
        why = f"the evidence supports it: {se.finding}"
    return Disagreement(index, text, judge, se.verdict, f"The judge says {judge}; {why}")


def disagreements(
    sentences: Iterable[tuple[int, str, str | None]], found: Sequence[SentenceEvidence]
) -> dict[int, Disagreement]:
    """The disagreements among (index, text, judge's verdict) sentences, by sentence index."""
    by_index = {se.index: se for se in found}
    out = {}
    for index, text, verdict in sentences:
        d = disagreement(index, text, verdict, by_index.get(index))
        if d is not None:
            out[index] = d
    return out


def stored_sentences(result: dict[str, Any] | None) -> list[tuple[int, str, str | None]]:
    """(index, text, verdict) of round 0 of a stored batch result."""
    rounds = (result or {}).get("rounds") or []
    if not rounds:
        return []
    return [
        (int(s.get("index", i)), str(s.get("text", "")), s.get("verdict"))
        for i, s in enumerate(rounds[0].get("sentences") or [])
    ]


def batch_disagreements(rows: Sequence[tuple[int, str, str, dict[str, Any] | None]], noun: str) -> list[dict[str, Any]]:
    """The flagged sentences of a batch's finished items ((item id, external id, reference, result) rows), round 0,
    as table rows. The evidence is found in bulk (lexical alignment unless EVIDENCE_EMBEDDINGS_IN_BULK)."""
    from services.dcr import evidence

    items = [(i, ext, ref, stored_sentences(res)) for i, ext, ref, res in rows]
    items = [x for x in items if x[3]]
    with evidence.bulk():
        found = evidence.analyse_many([(ref, [t for _, t, _ in sents]) for _, _, ref, sents in items], noun=noun)
    out = []
    for (item, ext, _, sents), f in zip(items, found, strict=True):
        # analyse_many numbers the sentences it is given from 0: map them back to the stored indices
        renumbered = [dataclasses.replace(se, index=sents[se.index][0]) for se in f]
        for d in disagreements(sents, renumbered).values():
            out.append(
                {
                    "item": item,
                    "external_id": ext,
                    "sentence": d.index + 1,
                    "text": d.text,
                    "judge": d.judge,
                    "evidence": d.evidence,
                    "why": d.why,
                }
            )
    return out
