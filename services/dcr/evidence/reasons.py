"""The checker's verdict for a sentence in words: what was found, and the reference sentence it is about."""

from __future__ import annotations

from collections.abc import Sequence

from services.dcr.evidence.alignment import Evidence
from services.dcr.evidence.findings import Rule, Verdict
from services.dcr.evidence.text import Span


def quote(text: str, limit: int = 160) -> str:
    t = " ".join(text.split())
    return f"'{t if len(t) <= limit else t[: limit - 1].rstrip() + '…'}'"


def refs_phrase(noun: str, idx: Sequence[int]) -> str:
    nums = [f"#{j + 1}" for j in sorted(idx)]
    if not nums:
        return f"the {noun}"
    if len(nums) == 1:
        return f"{noun} sentence {nums[0]}"
    return f"{noun} sentences {', '.join(nums[:-1])} and {nums[-1]} together"


def judge(
    verbatim: bool,
    verdict: Verdict,
    score: float,  # the calibrated probability that the sentence is supported
    novel: Sequence[Span],
    moved: Sequence[str],
    top: Sequence[Evidence],
    supporting: Sequence[int],
    noun: str,
) -> tuple[Verdict, Rule, str, str]:
    """The verdict, the rule that explains it, what was found, and the reference sentence it is about."""
    best = top[0] if top else None
    closest = f"closest: {quote(best.ref_text)}" if best else f"the {noun} has no sentence to compare with"
    if verbatim:
        return "consistent", "verbatim", f"Appears word for word in the {noun}", closest
    critical = [s for s in novel if s.kind in ("number", "name")]
    words = [s.text for s in novel if s.kind == "word"]
    unseen = f"{', '.join(repr(w) for w in words[:4])} {'is' if len(words) == 1 else 'are'} not in the {noun}"
    contradiction = next((e for e in top if e.role == "contradict"), None)
    band = f"probability {score:.2f}"
    if verdict == "consistent":
        extra = ""
        if critical:
            verb = "is" if len(critical) == 1 else "are"
            extra = f"; but {' and '.join(repr(s.text) for s in critical[:3])} {verb} not in the {noun}"
        elif words:
            extra = f"; {unseen}"
        return "consistent", "support", f"Supported by {refs_phrase(noun, supporting)} ({band}){extra}", closest
    lead = "Unsure" if verdict == "unknown" else ""
    if critical:
        what = " and ".join(f"'{s.text}'" for s in critical[:3])
        verb = "does" if len(critical) == 1 else "do"
        finding = f"{what} {verb} not appear in the {noun}"
        return verdict, "novel", (f"{lead}: {finding} ({band})" if lead else finding), closest
    if contradiction is not None:
        finding = f"The {noun} says otherwise: the sentence has {contradiction.conflict}"
        where = f"{noun} sentence: {quote(contradiction.ref_text)}"
        return verdict, "contradiction", (f"{lead}: {finding} ({band})" if lead else finding), where
    if moved:
        what = " and ".join(f"'{m}'" for m in moved[:3])
        finding = f"{what} {'is' if len(moved) == 1 else 'are'} in the {noun}, but not where it says this"
        return verdict, "contradiction", (f"{lead}: {finding} ({band})" if lead else finding), closest
    if verdict == "unknown":
        finding = f"Unsure: only partly supported by {refs_phrase(noun, supporting)} ({band})"
    else:
        finding = f"No {noun} sentence says this ({band})"
    return verdict, "support", finding + (f"; {unseen}" if words else ""), closest
