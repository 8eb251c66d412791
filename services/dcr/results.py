"""What a DCR pass produces: sentence verdicts, extra reasons, rewrites and rounds, and the score (Eq. 3).

Plain data and arithmetic, shared by the model-based evaluator (services.dcr) and the offline evidence checker
(services.dcr.evidence), so neither imports the other for its result types.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

CONSISTENT_AT = 1.0 - 1e-9  # a score counts as "fully consistent" at 1 (Eq. 3 gives exactly 1.0 then)

Verdict = Literal["consistent", "inconsistent", "unknown"]

# Appendix C.1: "we set both alpha and beta in Eq. 3 to 0".
DEFAULT_ALPHA = 0.0
DEFAULT_BETA = 0.0


# -- results ---------------------------------------------------------------------------------
@dataclass
class SentenceVerdict:
    """One candidate sentence with its verdict, reason and mark z_i."""

    index: int
    text: str
    verdict: Verdict = "unknown"
    reason: str | None = None
    mark: int | None = None
    rule_mark: int | None = None
    error: str | None = None
    evidence: dict[str, Any] | None = None  # the evidence checker's findings (not stored; see services.dcr.evidence)
    probability: float | None = None  # the evidence checker's calibrated probability that it is supported
    abstain_reason: str | None = None  # why the evidence checker left it undecided, and what would decide it


@dataclass
class ExtraReason:
    """A reason that judges no single sentence (Appendix E.4): kept in the array, offset by alpha/beta."""

    text: str
    mark: int | None = None
    field: Any = None  # its explicit verdict field, if the model gave one


@dataclass(frozen=True)
class Score:
    """Eq. 3: Z = (sum z_i + alpha) / (k + beta), Z^ = (Z + 1) / 2.

    z and z_hat are None unless every sentence was judged: a sentence with no mark is never counted as
    consistent, so a document with one has no score. partial_z_hat is Eq. 3 over the judged sentences only,
    shown as such ("on n_judged of n_sentences sentences").
    """

    k: int
    alpha: float
    beta: float
    z: float | None
    z_hat: float | None
    n_unknown: int = 0
    partial_z: float | None = None
    partial_z_hat: float | None = None
    n_sentences: int = 0
    set_alpha: float = DEFAULT_ALPHA  # the user's alpha and beta, before the Appendix E.4 offsets
    set_beta: float = DEFAULT_BETA

    @property
    def n_judged(self) -> int:
        return self.n_sentences - self.n_unknown

    def record(self) -> dict[str, Any]:
        """The score as output fields: `score` (None while any sentence is unknown), `partial_score`, counts."""
        return {
            "score": self.z_hat,
            "partial_score": self.partial_z_hat,
            "n_unknown": self.n_unknown,
            "n_judged": self.n_judged,
            "k": self.k,
            "alpha": self.alpha,
            "beta": self.beta,
        }


@dataclass
class Evaluation:
    """One DCE + AMC pass over a candidate."""

    sentences: list[SentenceVerdict]
    extras: list[ExtraReason] = field(default_factory=list)
    score: Score | None = None
    model_is_consistent: bool | None = None
    error: str | None = None
    fatal: bool = False
    notes: list[str] = field(default_factory=list)
    amc_agreement: tuple[int, int] | None = None  # (agreeing, compared) rule vs LLM converter
    checker_score: float | None = None  # the evidence checker's calibrated P(every sentence is supported)

    @property
    def n_judged(self) -> int:
        return sum(1 for s in self.sentences if s.mark is not None)

    @property
    def n_unknown(self) -> int:
        return len(self.sentences) - self.n_judged

    @property
    def all_consistent(self) -> bool:
        return bool(self.sentences) and all(s.verdict == "consistent" for s in self.sentences)

    def score_fields(self) -> dict[str, Any]:
        """The output fields of this pass's score (CLI lines, batch results).

        `score` is Eq. 3's Z^ and is None while any sentence is unjudged: an unknown sentence is never
        counted as consistent. `partial_score` is Eq. 3 over the judged sentences, `n_unknown` how many were
        not judged, `alpha`/`beta` the values used (the user's, plus Appendix E.4's offsets). The evidence
        checker adds `checker_score`, its calibrated probability that every sentence is supported.
        """
        checker = {} if self.checker_score is None else {"checker_score": self.checker_score}
        return self._eq3_fields() | checker

    def _eq3_fields(self) -> dict[str, Any]:
        if self.score is None:
            return {
                "score": None,
                "partial_score": None,
                "n_unknown": self.n_unknown,
                "n_judged": self.n_judged,
                "k": 0,
                "alpha": 0.0,
                "beta": 0.0,
            }
        return self.score.record() | {"n_unknown": self.n_unknown, "n_judged": self.n_judged}

    @property
    def failure(self) -> str | None:
        """Why this pass gives the document no score, or None when it has one."""
        if self.score is not None and self.score.z_hat is not None:
            return None
        if self.error:
            return self.error
        if self.n_unknown:
            return f"{self.n_unknown} of {len(self.sentences)} sentence(s) could not be judged: no score"
        return "no score"


@dataclass
class Rewrite:
    """An RAI rewrite of one sentence."""

    index: int
    before: str
    after: str
    reason: str = ""
    accepted: bool = True

    @property
    def changed(self) -> bool:
        return " ".join(self.before.split()) != " ".join(self.after.split())


@dataclass
class Round:
    """Round r of Algorithm 1: the candidate's sentences, their evaluation and the rewrites proposed."""

    index: int
    sentences: list[str]
    evaluation: Evaluation
    rewrites: list[Rewrite] = field(default_factory=list)
    improve_error: str | None = None

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


# -- Eq. 3 --------------------------------------------------------------------------------------
def eq3(marks: Sequence[int], alpha: float = 0.0, beta: float = 0.0) -> Score:
    """Eq. 3 over the score array; Z is None when k + beta is not positive (nothing judged)."""
    k = len(marks)
    denom = k + beta
    if denom <= 0:
        return Score(k=k, alpha=alpha, beta=beta, z=None, z_hat=None)
    z = (sum(marks) + alpha) / denom
    return Score(k=k, alpha=alpha, beta=beta, z=z, z_hat=(z + 1) / 2)


def score_evaluation(
    sentence_marks: Sequence[int | None],
    extra_marks: Sequence[int | None],
    *,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
) -> Score:
    """Eq. 3 with the user's alpha and beta, offset as Appendix E.4 does to remove every non-sentence-level entry.

    The score array holds the marks of the sentences and of the paragraph-level reasons; each
    paragraph-level entry adds -z to alpha and -1 to beta, so only sentence-level reasons count. A sentence
    without a mark leaves the document without a score (z_hat None); partial_z_hat is Eq. 3 over the
    sentences that were judged.
    """
    extras = [m for m in extra_marks if m is not None]
    judged = [m for m in sentence_marks if m is not None]
    n_unknown = len(sentence_marks) - len(judged)
    a, b = alpha - float(sum(extras)), beta - float(len(extras))
    partial = eq3(judged + extras, alpha=a, beta=b)
    return Score(
        k=partial.k,
        alpha=a,
        beta=b,
        z=partial.z if n_unknown == 0 else None,
        z_hat=partial.z_hat if n_unknown == 0 else None,
        n_unknown=n_unknown,
        partial_z=partial.z,
        partial_z_hat=partial.z_hat,
        n_sentences=len(sentence_marks),
        set_alpha=alpha,
        set_beta=beta,
    )
