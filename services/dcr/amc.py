"""AMC, the Auto-Metric Converter (DCR paper, Eq. 2, Table 9): a mark of +1 or -1 for every DCE reason, by rule
or by the LLM converter, and the score of Eq. 3."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field, field_validator

from services.dcr.config import DCRConfig, user_message
from services.dcr.results import Evaluation, ExtraReason, SentenceVerdict, Verdict, score_evaluation
from services.llm import LLMClient
from services.prompts import dcr as P
from services.verdicts import read_verdict, verdict_word


class AMCOutput(BaseModel):
    """Table 9 output: a mark of +1 or -1 per paragraph."""

    reason: list[str] = Field(default_factory=list)
    answer: list[int]

    @field_validator("reason", mode="before")
    @classmethod
    def _reasons(cls, v: Any) -> list[str]:
        return [str(x) for x in v] if isinstance(v, list) else []

    @field_validator("answer", mode="before")
    @classmethod
    def _marks(cls, v: Any) -> list[int]:
        if not isinstance(v, list):
            raise ValueError("answer is not a list")
        out = []
        for x in v:
            n = int(str(x).strip())
            if n not in (-1, 1):
                raise ValueError(f"mark {x!r} is not +1 or -1")
            out.append(n)
        return out


def amc_schema(n: int) -> dict:
    return {
        "type": "object",
        "properties": {
            "reason": {"type": "array", "items": {"type": "string"}, "minItems": n, "maxItems": n},
            "answer": {"type": "array", "items": {"type": "integer", "enum": [-1, 1]}, "minItems": n, "maxItems": n},
        },
        "required": ["reason", "answer"],
    }


# -- the deterministic converter ---------------------------------------------------------------
# What the prompts' JSON templates say; a weak model sometimes copies them instead of answering.
TEMPLATE_ECHOES = (
    "why this sentence",
    "why this summary",
    "original sentence",
    "improved sentence",
    "improved summary",
    "original summary",
)


def is_template_echo(text: str | None) -> bool:
    """Whether a model's text is (mostly) the prompt's placeholder rather than an answer."""
    t = " ".join((text or "").lower().split()).strip(" .'\"")
    return any(t == e or t.startswith(e) for e in TEMPLATE_ECHOES) or "you should start with" in t


def rule_mark(reason: str | None) -> int | None:
    """The verdict a DCE reason states: -1 for not consistent, +1 for consistent, None when unsure."""
    if not reason or is_template_echo(reason):
        return None
    return read_verdict(reason)


def stated_mark(reason: str | None, verdict: Any = None) -> tuple[int | None, str | None]:
    """The mark a reason and its verdict field state together, and why there is none when they disagree."""
    field_mark, text_mark = verdict_word(verdict), rule_mark(reason)
    if field_mark is not None and text_mark is not None and field_mark != text_mark:
        return None, (
            f"The verdict field says {verdict_of(field_mark)} but the reason reads {verdict_of(text_mark)}: "
            "left unjudged."
        )
    return (field_mark if field_mark is not None else text_mark), None


def verdict_of(mark: int | None) -> Verdict:
    return "consistent" if mark == 1 else "inconsistent" if mark == -1 else "unknown"


def convert(client: LLMClient, ev: Evaluation, cfg: DCRConfig, fields: dict[int, Any] | None = None) -> None:
    """AMC: a mark for every reason, by rule or by the LLM converter.

    The rule reads the verdict field, else the verdict the reason states. The LLM converter's mark is kept
    only where it agrees with a verdict the reason states plainly: a reason that says "not consistent"
    never becomes +1 (nor the reverse), whichever converter runs; a disagreement leaves the sentence unknown.
    """
    fields = fields or {}
    targets: list[SentenceVerdict | ExtraReason] = [v for v in ev.sentences if v.reason] + list(ev.extras)
    stated: list[int | None] = []
    for t in targets:
        if isinstance(t, SentenceVerdict):
            mark, conflict = stated_mark(t.reason, fields.get(t.index))
            t.rule_mark = mark
            if conflict:
                t.error = conflict
        else:
            mark, _ = stated_mark(t.text, t.field)
        t.mark = mark
        stated.append(mark)
    if cfg.amc == "llm" and targets:
        texts = [t.reason if isinstance(t, SentenceVerdict) else t.text for t in targets]
        paragraphs = ",\n".join("*" + json.dumps(x, ensure_ascii=False) for x in texts)
        res = client.chat_json(
            user_message(P.AMC.render(paragraphs=paragraphs)),
            parse=AMCOutput.model_validate,
            schema=amc_schema(len(texts)),
            prompt_version=P.AMC.id,
            stage="amc",
        )
        if not res.ok or len(res.value.answer) != len(texts):  # type: ignore[union-attr]
            problem = res.error or (
                f"the converter returned {len(res.value.answer)} marks for {len(texts)} reasons"  # type: ignore[union-attr]
            )
            ev.notes.append(f"Auto-Metric Converter failed ({problem}); those sentences are unknown.")
            for t in targets:
                t.mark = None
                if isinstance(t, SentenceVerdict):
                    t.error = f"Converter failed: {problem}"
        else:
            agree = compared = 0
            for t, mark, rm in zip(targets, res.value.answer, stated, strict=True):  # type: ignore[union-attr]
                if rm is not None:
                    compared += 1
                    agree += int(rm == mark)
                if rm is not None and rm != mark:
                    t.mark = None
                    if isinstance(t, SentenceVerdict):
                        t.error = (
                            f"The converter marked {mark:+d} but the reason states {verdict_of(rm)}: left unjudged."
                        )
                else:
                    t.mark = mark if not (isinstance(t, SentenceVerdict) and t.error) else None
            ev.amc_agreement = (agree, compared)
    for v in ev.sentences:
        if is_template_echo(v.reason):
            v.mark = None
            v.error = "The model repeated the prompt's template instead of judging this sentence."
        v.verdict = verdict_of(v.mark)
        if v.mark is None and not v.error:
            v.error = (
                "The reason states no verdict the converter could read."
                if v.reason
                else "The model gave an empty reason for this sentence."
            )
    ev.score = score_evaluation(
        [v.mark for v in ev.sentences], [x.mark for x in ev.extras], alpha=cfg.alpha, beta=cfg.beta
    )
