"""DCE, the Divide-Conquer Evaluator (DCR paper, Eq. 1, Tables 7, 8, 11): a reason per sentence of the
candidate, converted to marks by the AMC and scored by Eq. 3; the evidence method calls no model."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, field_validator, model_validator

from services.dcr.align import align
from services.dcr.amc import convert
from services.dcr.config import REFERENCE_NOUN, VERDICT_FIELD, DCRConfig, user_message
from services.dcr.results import Evaluation, ExtraReason, SentenceVerdict
from services.llm import LLMClient
from services.prompts import dcr as P


class SentenceReason(BaseModel):
    """One DCE reason: the sentence it is about and why it is or is not consistent."""

    sentence: str = ""
    reason: str = ""
    verdict: Any = None  # the explicit verdict field (beyond the paper); read with verdicts.verdict_word

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"sentence": "", "reason": data}
        if isinstance(data, dict):
            # Other names models give the same fields (the verdict field is beyond the paper in any case).
            data = dict(data)
            for key in ("is_consistent", "consistent", "label", "judgement", "judgment"):
                if data.get("verdict") is None and key in data:
                    data["verdict"] = data[key]
            for key in ("explanation", "rationale", "justification"):
                if not data.get("reason") and data.get(key):
                    data["reason"] = data[key]
        return data

    @field_validator("sentence", "reason", mode="before")
    @classmethod
    def _to_text(cls, v: Any) -> str:
        return "" if v is None else str(v)


class DCEOutput(BaseModel):
    """Table 7/8 output: a reason per sentence and an overall flag."""

    reason: list[SentenceReason]
    is_consistent: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, list):
            return {"reason": data}
        if isinstance(data, dict) and "reason" not in data and "reasons" in data:
            data = {**data, "reason": data["reasons"]}
        if isinstance(data, dict) and isinstance(data.get("reason"), dict | str):
            data = {**data, "reason": [data["reason"]]}
        return data


def dce_schema(k: int) -> dict:
    item = {
        "type": "object",
        "properties": {
            "sentence": {"type": "string"},
            "reason": {"type": "string"},
            "verdict": {"type": "string", "enum": ["consistent", "inconsistent"]},
        },
        "required": ["sentence", "reason", "verdict"],
    }
    return {
        "type": "object",
        "properties": {
            "reason": {"type": "array", "items": item, "minItems": k, "maxItems": k},
            "is_consistent": {"type": "boolean"},
        },
        "required": ["reason", "is_consistent"],
    }


def paragraph_schema() -> dict:
    return {
        "type": "object",
        "properties": {
            "reason": {
                "type": "object",
                "properties": {"sentence": {"type": "string"}, "reason": {"type": "string"}},
                "required": ["sentence", "reason"],
            },
            "is_consistent": {"type": "boolean"},
        },
        "required": ["reason", "is_consistent"],
    }


def evaluate(client: LLMClient, reference: str, sentences: list[str], cfg: DCRConfig) -> Evaluation:
    """One DCE pass (Eq. 1) and AMC (Eq. 2), scored by Eq. 3; the evidence method calls no model."""
    if cfg.method == "evidence":
        from services.dcr.evidence import check

        ev = check(reference, sentences, noun=REFERENCE_NOUN.get(cfg.task, "reference"))
        if cfg.task == "custom" and cfg.criteria.strip():
            ev.notes.append("The evidence checker does not read custom criteria; it checks support by the reference.")
        return ev
    if cfg.method == "paragraph":
        return _evaluate_paragraph(client, reference, sentences, cfg)
    prompt = cfg.dce_prompt()
    content = prompt.render(reference=reference, candidate=" ".join(sentences), criteria=cfg.criteria)
    res = client.chat_json(
        user_message(content),
        parse=DCEOutput.model_validate,
        schema=dce_schema(len(sentences)),
        prompt_version=f"{prompt.id}+{VERDICT_FIELD}",
        stage="dce",
    )
    verdicts = [SentenceVerdict(index=i, text=s) for i, s in enumerate(sentences)]
    if not res.ok:
        for v in verdicts:
            v.error = res.error
        return Evaluation(sentences=verdicts, error=res.error, fatal=res.fatal, score=None)
    out: DCEOutput = res.value  # type: ignore[assignment]
    ev = Evaluation(sentences=verdicts, model_is_consistent=out.is_consistent)
    by_sentence, leftovers = align([r.sentence for r in out.reason], sentences, [r.reason for r in out.reason])
    if len(out.reason) != len(sentences):
        ev.notes.append(
            f"The model returned {len(out.reason)} reason{'' if len(out.reason) == 1 else 's'} for "
            f"{len(sentences)} sentence{'' if len(sentences) == 1 else 's'}; "
            "they were matched to sentences by the text each quotes or what each says."
        )
    fields: dict[int, Any] = {}
    for v, item_idx in zip(verdicts, by_sentence, strict=True):
        if item_idx is None:
            v.error = "The model gave no reason for this sentence."
        else:
            v.reason = out.reason[item_idx].reason.strip()
            fields[v.index] = out.reason[item_idx].verdict
    ev.extras = [ExtraReason(text=out.reason[i].reason.strip(), field=out.reason[i].verdict) for i in leftovers]
    if ev.extras:
        ev.notes.append(
            f"{len(ev.extras)} reason(s) matched no sentence and were treated as paragraph-level; "
            "alpha and beta remove them from the score (Appendix E.4)."
        )
    convert(client, ev, cfg, fields)
    return ev


def _evaluate_paragraph(client: LLMClient, reference: str, sentences: list[str], cfg: DCRConfig) -> Evaluation:
    prompt = P.PARAGRAPH_DCE
    candidate = " ".join(sentences)
    res = client.chat_json(
        user_message(prompt.render(reference=reference, candidate=candidate)),
        parse=DCEOutput.model_validate,
        schema=paragraph_schema(),
        prompt_version=prompt.id,
        stage="paragraph-evaluator",
    )
    unit = SentenceVerdict(index=0, text=candidate)
    if not res.ok:
        unit.error = res.error
        return Evaluation(sentences=[unit], error=res.error, fatal=res.fatal)
    out: DCEOutput = res.value  # type: ignore[assignment]
    unit.reason = " ".join(r.reason.strip() for r in out.reason if r.reason.strip()) or None
    ev = Evaluation(sentences=[unit], model_is_consistent=out.is_consistent)
    if unit.reason is None:
        unit.error = "The model gave no reason."
    convert(client, ev, cfg)
    return ev
