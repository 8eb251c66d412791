"""What a DCR run delivers under the user's accept/reject choices (Algorithm 1 with rejected rewrites): the final
text, the score that belongs to it, and the rewrites left out with why.

Algorithm 1 applies every rewrite to build the next round, so each round's score is for the text with every
rewrite so far applied. Once a rewrite is rejected the delivered text differs from those rounds' texts: a score
belongs to it only when some round judged exactly that text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.dcr.rai import compose_final
from services.dcr.results import Round, Score


@dataclass(frozen=True)
class LeftOut:
    """A proposed rewrite that is not in the delivered text, and why."""

    round: int  # the round whose verdicts it answered
    index: int  # the sentence it rewrites
    before: str
    after: str
    reason: str  # the improver's reason for it
    why: str  # why it is not in the delivered text


# The note on a round that judges the delivered text after the review ("Score the delivered text"): one more
# evaluation inside the run, of the candidate with the accepted rewrites only; it proposes no rewrite.
DELIVERED_NOTE = "This round judges the delivered text (the accepted rewrites only), scored after the review."


@dataclass(frozen=True)
class Delivered:
    """The text a run delivers and the score that belongs to it (None when no round judged exactly this text)."""

    text: str
    sentences: tuple[str, ...]
    judged_round: int | None
    score: Score | None
    left_out: tuple[LeftOut, ...]
    last_round: int
    scored_after_review: bool = False  # the judging round was added to score this text (DELIVERED_NOTE)

    @property
    def z_hat(self) -> float | None:
        return self.score.z_hat if self.score is not None else None

    @property
    def judged(self) -> bool:
        return self.judged_round is not None

    def score_note(self) -> str:
        """Which text the score is of, or that the delivered text was not judged, in words."""
        if self.judged_round is None:
            return (
                f"The delivered text was not judged: {len(self.left_out)} rejected rewrite(s) make it differ from "
                "every round's text, and each round was judged with every rewrite applied. Score it in this run "
                "(one more evaluation)."
            )
        if self.scored_after_review:
            return (
                f"The score of round {self.judged_round}, which judged the delivered text after the review (one "
                "more evaluation in this run)."
            )
        if self.judged_round == self.last_round:
            return f"The score of round {self.judged_round}, whose text is the delivered text."
        return (
            f"The score of round {self.judged_round}, the last round whose text is the delivered text "
            f"(later rounds judged rewrites that were rejected)."
        )


def _norm(text: str) -> str:
    return " ".join(text.split())


def _verdict_after(rounds: Sequence[Round], rnd: int, index: int) -> str:
    """How the next round judged the sentence a rewrite produced ('' when there is no next round)."""
    nxt = next((r for r in rounds if r.index == rnd + 1), None)
    if nxt is None:
        return ""
    s = next((v for v in nxt.evaluation.sentences if v.index == index), None)
    return "" if s is None else f"; round {nxt.index} judged it {s.verdict}"


def delivered(rounds: Sequence[Round]) -> Delivered:
    """The delivered text of a run's rounds, the score of the round that judged exactly it, and what was left out."""
    final = compose_final(rounds)
    left: list[LeftOut] = []
    rejected_in: dict[int, int] = {}  # sentence -> the round of its rejected rewrite
    for rnd in rounds:
        for rw in rnd.rewrites:
            if not rw.changed:
                continue
            if rw.index in rejected_in:
                why = (
                    f"Not applied: it rewrites sentence #{rw.index + 1} as changed by the rewrite rejected in round "
                    f"{rejected_in[rw.index]}" + _verdict_after(rounds, rnd.index, rw.index)
                )
            elif not rw.accepted:
                rejected_in[rw.index] = rnd.index
                why = "Rejected by the reviewer" + _verdict_after(rounds, rnd.index, rw.index)
            else:
                continue
            left.append(LeftOut(rnd.index, rw.index, rw.before, rw.after, rw.reason, why))
    target = _norm(" ".join(final))
    match = next((r for r in reversed(rounds) if _norm(r.text) == target), None) if rounds else None
    return Delivered(
        text=" ".join(final),
        sentences=tuple(final),
        judged_round=None if match is None else match.index,
        score=None if match is None else match.evaluation.score,
        left_out=tuple(left),
        last_round=rounds[-1].index if rounds else 0,
        scored_after_review=match is not None and DELIVERED_NOTE in match.evaluation.notes,
    )
