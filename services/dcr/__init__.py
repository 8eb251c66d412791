"""Divide-Conquer-Reasoning (DCR paper): DCE (Eq. 1), AMC (Eq. 2), the score (Eq. 3), RAI (Eq. 4).

Pure domain code: every model call goes through `LLMClient.chat_json`; nothing here touches the
database or the UI.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, field_validator, model_validator

from services.dcr.results import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    Evaluation,
    ExtraReason,
    Rewrite,
    Round,
    SentenceVerdict,
    Verdict,
    score_evaluation,
)
from services.llm import LLMClient
from services.prompts import dcr as P
from services.text import similarity
from services.verdicts import read_verdict, verdict_word

Task = Literal["summarization", "semantic", "custom"]
Method = Literal["dce-amc", "paragraph", "evidence"]
Converter = Literal["llm", "rule"]

TASK_LABELS = {
    "summarization": "Summarization (article → summary, Table 8)",
    "semantic": "Semantic / QA answer (true answer → attempt, Table 7)",
    "custom": "Custom criteria",
}
METHOD_LABELS = {
    "dce-amc": "Sentence by sentence (DCE + AMC)",
    "paragraph": "Paragraph-level baseline (Tables 11, 12)",
    "evidence": "Evidence checker (offline, no model call)",
}
# What the reference is called in the evidence checker's reasons, by task.
REFERENCE_NOUN = {"summarization": "article", "semantic": "true answer", "custom": "reference"}
NO_IMPROVE_REASON = (
    "The evidence checker makes no model call, and improving needs a model to rewrite the sentences: "
    "choose another evaluator to improve a candidate."
)
CONVERTER_LABELS = {
    "rule": "Rule: the verdict field, else the verdict each reason states (no extra call)",
    "llm": "LLM: the paper's Auto-Metric Converter (Table 9, one call)",
}
# Beyond the paper: the DCE's structured output asks for an explicit verdict beside each reason, so the
# converter reads what the model decided instead of guessing it from prose. The part of the cache key
# that says so (the prompt text itself is the paper's, unchanged).
VERDICT_FIELD = "verdict-field@1"

ALIGN_THRESHOLD = 0.55


@dataclass(frozen=True)
class DCRConfig:
    """What to run; recorded with every run."""

    task: Task = "summarization"
    criteria: str = ""
    method: Method = "dce-amc"
    amc: Converter = "rule"
    max_rounds: int = 3
    alpha: float = DEFAULT_ALPHA  # Eq. 3's alpha and beta as set by the user (Appendix C.1: both 0); the
    beta: float = DEFAULT_BETA  # offsets for paragraph-level reasons (Appendix E.4) are added to these

    @property
    def uses_model(self) -> bool:
        """Whether this configuration calls a model at all (the evidence checker does not)."""
        return self.method != "evidence"

    def dce_prompt(self) -> P.Prompt:
        if self.method == "paragraph":
            return P.PARAGRAPH_DCE
        return {"summarization": P.SUMMARIZATION_DCE, "semantic": P.SEMANTIC_DCE, "custom": P.CUSTOM_DCE}[self.task]

    def improve_prompt(self) -> P.Prompt:
        return P.PARAGRAPH_RAI if self.method == "paragraph" else P.RAI

    def prompt_versions(self) -> dict[str, str]:
        if self.method == "evidence":
            from services.dcr.evidence import VERSION

            return {"evaluator": VERSION}
        out = {"evaluator": self.dce_prompt().id, "improver": self.improve_prompt().id}
        out["converter"] = P.AMC.id if self.amc == "llm" else "rule@1"
        return out


# -- typed model outputs -------------------------------------------------------------------------
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


class RAIItem(BaseModel):
    """Table 10 output item: a sentence, its rewrite and how it changed."""

    sentence: str = ""
    improved_sentence: str
    reason: str = ""


def parse_rai(data: Any) -> list[RAIItem]:
    """The Table 10 array; also accepts it wrapped in an object (JSON-mode servers need one)."""
    if isinstance(data, dict):
        if "improved_sentence" in data:
            data = [data]
        else:
            data = next((v for v in data.values() if isinstance(v, list)), None)
    if not isinstance(data, list):
        raise ValueError("expected a list of rewritten sentences")
    return [RAIItem.model_validate(x) for x in data]


class ParagraphRAIOutput(BaseModel):
    """Table 12 output."""

    sentence: str = ""
    improved_summary: str
    reason: str = ""


# -- schemas for constrained decoding ----------------------------------------------------------
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


def amc_schema(n: int) -> dict:
    return {
        "type": "object",
        "properties": {
            "reason": {"type": "array", "items": {"type": "string"}, "minItems": n, "maxItems": n},
            "answer": {"type": "array", "items": {"type": "integer", "enum": [-1, 1]}, "minItems": n, "maxItems": n},
        },
        "required": ["reason", "answer"],
    }


def rai_schema(k: int) -> dict:
    item = {
        "type": "object",
        "properties": {
            "sentence": {"type": "string"},
            "improved_sentence": {"type": "string"},
            "reason": {"type": "string"},
        },
        "required": ["sentence", "improved_sentence", "reason"],
    }
    return {"type": "array", "items": item, "minItems": k, "maxItems": k}


def paragraph_rai_schema() -> dict:
    return {
        "type": "object",
        "properties": {
            "sentence": {"type": "string"},
            "improved_summary": {"type": "string"},
            "reason": {"type": "string"},
        },
        "required": ["sentence", "improved_summary", "reason"],
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


# -- alignment of reasons to sentences ---------------------------------------------------------
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the of to in on at by for with and or but is are was were be been it its this that these those as from "
    "has have had not no he she they his her their there than then so such which who what when where".split()
)
_WHOLE = re.compile(
    r"\b(?:paragraphs?|summary|summaries|whole|overall|entire|entirety|texts?|passages?|responses?|answers?|"
    r"candidate|document|all (?:the )?sentences|every sentence|each sentence)\b",
    re.IGNORECASE,
)
_ONE_SENTENCE = re.compile(r"\b(?:this|the|that) (?:sentence|claim|statement|bullet|point)\b", re.IGNORECASE)
POSITION_BONUS = 0.1
MIN_MATCH = 0.45  # below this an item is not taken to judge the sentence it was paired with


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def content_overlap(reason: str, sentence: str) -> float:
    """Share of the sentence's content words that a reason repeats (a reason that paraphrases its sentence)."""
    words = _content_words(sentence)
    return len(words & _content_words(reason)) / len(words) if words else 0.0


def is_paragraph_level(quote: str, reason: str, sentences: Sequence[str]) -> bool:
    """Whether an item judges no single sentence (Appendix E.4): it quotes none and speaks of the whole text."""
    if quote.strip() and max((similarity(quote, s) for s in sentences), default=0.0) >= ALIGN_THRESHOLD:
        return False
    text = f"{quote} {reason}"
    return bool(_WHOLE.search(text)) and not _ONE_SENTENCE.search(text)


def preload() -> None:
    """Import what reading a judge's answer needs (scipy's assignment) before many threads start: a first
    import inside the threads holds every one of them on the import lock while requests wait."""
    import scipy.optimize  # noqa: F401


def align(
    items: Sequence[str], sentences: Sequence[str], reasons: Sequence[str] | None = None
) -> tuple[list[int | None], list[int]]:
    """Match model items to our sentences by the sentence each quotes or, failing that, by what its reason says.

    Returns, per sentence, the index of its item (or None), and the indices of items that judge no single
    sentence (Appendix E.4's paragraph-level reasons, and items left over when there are more than sentences).
    Items that speak of the whole text and quote no sentence are paragraph-level. The rest are assigned one
    to one (Hungarian assignment over quote similarity, content overlap and a small bonus for the same
    position), so a paraphrased quote still keeps its reason with its sentence. Without quotes and with as
    many items as sentences, position decides, as the prompt asks for one entry per sentence in order.
    """
    from scipy.optimize import linear_sum_assignment  # loaded up front by preload() in batches

    k = len(sentences)
    reasons = list(reasons) if reasons is not None else [""] * len(items)
    whole = [i for i in range(len(items)) if is_paragraph_level(items[i], reasons[i], sentences)]
    cand = [i for i in range(len(items)) if i not in whole]
    by_sentence: list[int | None] = [None] * k
    if not cand or not k:
        return by_sentence, list(range(len(items))) if k else list(range(len(items)))
    if len(cand) == k and not any(items[i].strip() for i in cand):
        for j, i in enumerate(cand):
            by_sentence[j] = i
        return by_sentence, whole
    gain = np.zeros((len(cand), k))
    for a, i in enumerate(cand):
        for j, sent in enumerate(sentences):
            quote = similarity(items[i], sent) if items[i].strip() else 0.0
            gain[a, j] = max(quote, 0.8 * content_overlap(reasons[i], sent))
            if len(cand) == k and a == j:
                gain[a, j] += POSITION_BONUS
    rows, cols = linear_sum_assignment(gain, maximize=True)
    used = set()
    for a, j in zip(rows, cols, strict=True):
        if gain[a, j] < MIN_MATCH and not (len(cand) == k and a == j):
            continue  # neither its quote nor its words point to this sentence, nor (with equal counts) its place
        by_sentence[int(j)] = cand[int(a)]
        used.add(cand[int(a)])
    leftovers = sorted(set(whole) | {i for i in cand if i not in used})
    return by_sentence, leftovers


# -- DCE + AMC ---------------------------------------------------------------------------------
def _user(content: str) -> list[dict]:
    return [{"role": "user", "content": content}]


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
        _user(content),
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
            f"The model returned {len(out.reason)} reasons for {len(sentences)} sentences; "
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
    _convert(client, ev, cfg, fields)
    return ev


def _convert(client: LLMClient, ev: Evaluation, cfg: DCRConfig, fields: dict[int, Any] | None = None) -> None:
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
            _user(P.AMC.render(paragraphs=paragraphs)),
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


def _evaluate_paragraph(client: LLMClient, reference: str, sentences: list[str], cfg: DCRConfig) -> Evaluation:
    prompt = P.PARAGRAPH_DCE
    candidate = " ".join(sentences)
    res = client.chat_json(
        _user(prompt.render(reference=reference, candidate=candidate)),
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
    _convert(client, ev, cfg)
    return ev


# -- RAI --------------------------------------------------------------------------------------
def improve(client: LLMClient, reference: str, rnd: Round, cfg: DCRConfig) -> tuple[list[Rewrite], str | None]:
    """RAI (Eq. 4): rewrites for the inconsistent sentences of a round; consistent ones are kept."""
    ev = rnd.evaluation
    bad = [v for v in ev.sentences if v.verdict == "inconsistent"]
    if not bad:
        return [], None
    if cfg.method == "paragraph":
        unit = ev.sentences[0]
        prompt = P.PARAGRAPH_RAI
        res = client.chat_json(
            _user(prompt.render(reference=reference, candidate=unit.text, reason=unit.reason or "")),
            parse=ParagraphRAIOutput.model_validate,
            schema=paragraph_rai_schema(),
            prompt_version=prompt.id,
            stage="paragraph-improver",
        )
        if not res.ok:
            return [], res.error
        out: ParagraphRAIOutput = res.value  # type: ignore[assignment]
        if is_template_echo(out.improved_summary):
            return [
                Rewrite(index=0, before=unit.text, after=unit.text, reason="The improver repeated the template.")
            ], None
        return [
            Rewrite(index=0, before=unit.text, after=out.improved_summary.strip() or unit.text, reason=out.reason)
        ], None
    payload = [{"sentence": v.text, "reason": v.reason or ""} for v in ev.sentences]
    res = client.chat_json(
        _user(P.RAI.render(reference=reference, sentences=json.dumps(payload, ensure_ascii=False, indent=1))),
        parse=parse_rai,
        schema=rai_schema(len(payload)),
        prompt_version=P.RAI.id,
        stage="rai",
    )
    if not res.ok:
        return [], res.error
    items: list[RAIItem] = res.value  # type: ignore[assignment]
    by_sentence, _ = align([it.sentence for it in items], [v.text for v in ev.sentences], [it.reason for it in items])
    rewrites = []
    for v in bad:
        idx = by_sentence[v.index]
        after = items[idx].improved_sentence.strip() if idx is not None else ""
        if after and is_template_echo(after):
            rewrites.append(
                Rewrite(
                    index=v.index, before=v.text, after=v.text, reason="The improver repeated the prompt's template."
                )
            )
        elif not after:
            rewrites.append(
                Rewrite(
                    index=v.index,
                    before=v.text,
                    after=v.text,
                    reason="The improver returned no rewrite for this sentence.",
                )
            )
        else:
            rewrites.append(Rewrite(index=v.index, before=v.text, after=after, reason=items[idx].reason.strip()))  # type: ignore[index]
    return rewrites, None


def apply_rewrites(sentences: list[str], rewrites: Sequence[Rewrite]) -> list[str]:
    """The next round's candidate: each rewrite replaces its sentence (positions are kept)."""
    out = list(sentences)
    for rw in rewrites:
        if rw.accepted and rw.changed:
            out[rw.index] = rw.after
    return out


def compose_final(rounds: Sequence[Round]) -> list[str]:
    """The final text under the user's choices: a sentence follows its chain of accepted rewrites.

    A rejected rewrite freezes its sentence: later rounds' rewrites of it were built on the rejected
    text, so they are not applied either.
    """
    if not rounds:
        return []
    final = list(rounds[0].sentences)
    frozen: set[int] = set()
    for rnd in rounds:
        for rw in rnd.rewrites:
            if rw.index in frozen or not rw.changed:
                continue
            if rw.accepted:
                final[rw.index] = rw.after
            else:
                frozen.add(rw.index)
    return final


# -- Algorithm 1 -----------------------------------------------------------------------------
def first_round(client: LLMClient, reference: str, sentences: list[str], cfg: DCRConfig) -> Round:
    """Round 0: evaluate the candidate as given."""
    return Round(index=0, sentences=list(sentences), evaluation=evaluate(client, reference, sentences, cfg))


def continue_rounds(
    client: LLMClient,
    reference: str,
    rounds: list[Round],
    cfg: DCRConfig,
    *,
    on_improved: Callable[[Round], None] | None = None,
    on_round: Callable[[Round], None] | None = None,
) -> list[Round]:
    """Algorithm 1 from the last round: improve and re-evaluate until all consistent or m rounds.

    Without a model (the evidence checker) there is nothing to rewrite with: the rounds are returned as they are.
    """
    if not cfg.uses_model:
        return rounds
    while rounds and rounds[-1].index < cfg.max_rounds:
        last = rounds[-1]
        if last.evaluation.fatal or last.evaluation.all_consistent:
            break
        last.rewrites, last.improve_error = improve(client, reference, last, cfg)
        if on_improved:
            on_improved(last)
        if not any(rw.changed for rw in last.rewrites):
            break
        sentences = apply_rewrites(last.sentences, last.rewrites)
        nxt = Round(index=last.index + 1, sentences=sentences, evaluation=evaluate(client, reference, sentences, cfg))
        rounds.append(nxt)
        if on_round:
            on_round(nxt)
    return rounds


def candidate_units(candidate: str, cfg: DCRConfig, sentences: list[str]) -> list[str]:
    """What is judged: the sentences, or the whole candidate as one unit for the paragraph method."""
    return [" ".join(sentences)] if cfg.method == "paragraph" else sentences
