"""Zero-shot factual-inconsistency paradigms of paper 003: Summ-NLI (Eq. 1), Sent-NLI (Eq. 2), QG-QA (Eqs. 3-4).

Pure domain code: every model call goes through `LLMClient.chat_json`; nothing here touches the
database or the UI. A reply that skips the judgement, gives no questions or judges one question
twice is recorded as a parse failure of its window or pair; no verdict is guessed for it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from services.llm import CallResult, LLMClient, UsageLedger
from services.nli.replies import (
    JUDGEMENT_SCHEMA,
    QA_SCHEMA,
    QG_SCHEMA,
    SCORE_SCHEMA,
    Label,
    parse_nli,
    parse_nli_score,
    parse_qa,
    parse_qa_window,
    parse_qg,
    qa_pairs_text,
)
from services.nli.retrieval import (
    CONTEXT_BUDGET_TOKENS,
    FIT_TOKENS,
    WINDOW_CONTEXT_SENTENCES,
    ContextSelection,
    Retrieval,
    context_for,
    needs_retrieval,
    windows_of,
)
from services.prompts import nli as P
from services.text import split_sentences


# -- results ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NliResult:
    """Summ-NLI (Eq. 1): one judgement of the whole summary, a label or (score mode) a score in a range."""

    label: Label | None
    reasoning: str | None
    parse_error: str | None
    context: ContextSelection | None = None  # None: the whole document was the context
    usage: dict[str, Any] = field(default_factory=dict)
    score: float | None = None  # score mode: the model's score on `score_range`
    score_range: tuple[float, float] | None = None  # None: the binary mode of Figure 4


@dataclass(frozen=True)
class WindowResult:
    """One Sent-NLI window: summary sentences [start, end) and the judgement on them."""

    start: int
    end: int
    sentences: tuple[str, ...]
    label: Label | None
    reasoning: str | None
    parse_error: str | None
    context: ContextSelection | None = None


@dataclass(frozen=True)
class SentNliResult:
    """Sent-NLI: window judgements and their Eq. 2 aggregate."""

    windows: tuple[WindowResult, ...]
    label: Label | None
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def n_failed(self) -> int:
        return sum(1 for w in self.windows if w.parse_error)


@dataclass(frozen=True)
class QAPair:
    """One QG question verified by QA; a window whose QG failed has one pair with no question."""

    window: int
    question: str | None
    expected_answer: str | None  # the entity QG gave (the answer QA checks against the document)
    answer: str | None  # the answer as the QA reply restated it
    reasoning: str | None
    judgement: Label | None
    parse_error: str | None
    context: ContextSelection | None = None


@dataclass(frozen=True)
class QgQaResult:
    """QG-QA: verified pairs and their Eq. 4 aggregate."""

    pairs: tuple[QAPair, ...]
    label: Label | None
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def n_failed(self) -> int:
        return sum(1 for p in self.pairs if p.parse_error)


def _any_inconsistent(labels: list[Label | None]) -> Label | None:
    """Eqs. 2 and 4: inconsistent if any unit is; otherwise None if any unit could not be read (an unread
    unit is never taken as consistent), else consistent."""
    if "inconsistent" in labels:
        return "inconsistent"
    if not labels or any(lab is None for lab in labels):
        return None
    return "consistent"


def _per_document(client: LLMClient) -> tuple[LLMClient, UsageLedger]:
    ledger = UsageLedger()
    return client.fork(ledger), ledger


def _close(client: LLMClient, ledger: UsageLedger) -> dict[str, Any]:
    # the per-document ledger's records also count in the caller's run ledger
    for rec in ledger.records:
        client.ledger.add(rec)
    return ledger.summary()


def _ask(
    client: LLMClient, prompt: str, *, parse: Any, schema: dict, version: str, stage: str, sample: int = 0
) -> CallResult:
    # `sample` is the cache's sample index: repeated runs (Table 4) ask again instead of reading the cache
    return client.chat_json(
        [{"role": "user", "content": prompt}],
        parse=parse,
        schema=schema,
        prompt_version=version,
        stage=stage,
        sample_index=sample,
    )


# -- the paradigms --------------------------------------------------------------------------------
def summ_nli(
    client: LLMClient,
    document: str,
    summary: str,
    *,
    budget_tokens: int = CONTEXT_BUDGET_TOKENS,
    sample: int = 0,
    retrieval: Retrieval = "auto",
    fit_tokens: int = FIT_TOKENS,
    score_range: tuple[float, float] | None = None,
) -> NliResult:
    """Summ-NLI (Eq. 1): the whole summary judged at once (Figure 4). With `score_range` (low, high) it asks for a
    consistency score in that range instead (section 3.1's score mode; the prompt is Figure 4 reworded, see
    services.prompts.nli); the label is then "consistent" only at the top of the range."""
    doc_client, ledger = _per_document(client)
    use = needs_retrieval(document, retrieval=retrieval, fit_tokens=fit_tokens)
    ctx = context_for(document, summary, budget_tokens, None, use)
    values = {"source text": ctx.text if ctx else document, "summary": summary}
    if score_range is not None:
        low, high = (float(v) for v in score_range)
        if not low < high:
            raise ValueError(f"the score range must go from low to high, not {low:g}-{high:g}")
        bounds = {"low": f"{low:g}", "high": f"{high:g}"}
        res = _ask(
            doc_client,
            P.SUMM_NLI_SCORE.render(**values, **bounds) + P.SCORE_FORMAT.render(**bounds),
            parse=functools.partial(parse_nli_score, low=low, high=high),
            schema=SCORE_SCHEMA,
            version=f"{P.SUMM_NLI_SCORE.id}+{P.SCORE_FORMAT.id}|{low:g}-{high:g}",
            stage="summ-nli",
            sample=sample,
        )
        score, reasoning = res.value if res.ok else (None, None)
        label: Label | None = None if score is None else ("consistent" if score >= high else "inconsistent")
        return NliResult(
            label, reasoning, res.error, context=ctx, usage=_close(client, ledger), score=score, score_range=(low, high)
        )
    prompt = P.SUMM_NLI.render(**values)
    res = _ask(
        doc_client,
        prompt + P.JUDGEMENT_FORMAT.template,
        parse=parse_nli,
        schema=JUDGEMENT_SCHEMA,
        version=f"{P.SUMM_NLI.id}+{P.JUDGEMENT_FORMAT.id}",
        stage="summ-nli",
        sample=sample,
    )
    label, reasoning = res.value if res.ok else (None, None)
    return NliResult(label, reasoning, res.error, context=ctx, usage=_close(client, ledger))


def sent_nli(
    client: LLMClient,
    document: str,
    summary: str,
    *,
    window: int = 1,
    budget_tokens: int = CONTEXT_BUDGET_TOKENS,
    n_sentences: int = WINDOW_CONTEXT_SENTENCES,
    sample: int = 0,
    retrieval: Retrieval = "auto",
    fit_tokens: int = FIT_TOKENS,
) -> SentNliResult:
    """Sent-NLI (Eq. 2): each window of `window` summary sentences judged (Figure 5); any inconsistent wins,
    and a window that could not be read leaves a document with no inconsistent window unknown."""
    doc_client, ledger = _per_document(client)
    sentences = split_sentences(summary)
    out: list[WindowResult] = []
    use = needs_retrieval(document, retrieval=retrieval, fit_tokens=fit_tokens)
    for start, end in windows_of(sentences, window):
        text = " ".join(sentences[start:end])
        ctx = context_for(document, text, budget_tokens, n_sentences, use)
        prompt = P.SENT_NLI.render(**{"source text": ctx.text if ctx else document, "Sentence": text})
        res = _ask(
            doc_client,
            prompt + P.JUDGEMENT_FORMAT.template,
            parse=parse_nli,
            schema=JUDGEMENT_SCHEMA,
            version=f"{P.SENT_NLI.id}+{P.JUDGEMENT_FORMAT.id}",
            stage="sent-nli",
            sample=sample,
        )
        label, reasoning = res.value if res.ok else (None, None)
        out.append(WindowResult(start, end, tuple(sentences[start:end]), label, reasoning, res.error, ctx))
    return SentNliResult(tuple(out), _any_inconsistent([w.label for w in out]), usage=_close(client, ledger))


def qg_qa(
    client: LLMClient,
    document: str,
    summary: str,
    *,
    window: int = 1,
    budget_tokens: int = CONTEXT_BUDGET_TOKENS,
    n_sentences: int = WINDOW_CONTEXT_SENTENCES,
    sample: int = 0,
    retrieval: Retrieval = "auto",
    fit_tokens: int = FIT_TOKENS,
    qa_per_pair: bool = False,
) -> QgQaResult:
    """QG-QA (Eqs. 3-4): questions from each window (Figure 6, no document), verified on the document in a
    new conversation (Figure 7): all of a window's pairs in one prompt, as Figure 7 lists them, or one pair a
    call with `qa_per_pair`. Any inconsistent answer wins; an unreadable pair leaves the rest unknown."""
    doc_client, ledger = _per_document(client)
    sentences = split_sentences(summary)
    pairs: list[QAPair] = []
    use = needs_retrieval(document, retrieval=retrieval, fit_tokens=fit_tokens)
    for w, (start, end) in enumerate(windows_of(sentences, window)):
        text = " ".join(sentences[start:end])
        qg = _ask(
            doc_client,
            P.QG.render(context=summary, sentence=text) + P.QG_FORMAT.template,
            parse=parse_qg,
            schema=QG_SCHEMA,
            version=f"{P.QG.id}+{P.QG_FORMAT.id}",
            stage="qg",
            sample=sample,
        )
        if not qg.ok:
            pairs.append(QAPair(w, None, None, None, None, None, qg.error))
            continue
        ctx = context_for(document, text, budget_tokens, n_sentences, use)
        source = ctx.text if ctx else document
        if not qa_per_pair:
            found: list[tuple[str, str]] = qg.value  # type: ignore[assignment]
            qa = _ask(
                doc_client,
                P.QA.render(**{"source text": source, "Question-answer pairs": qa_pairs_text(found)})
                + P.QA_FORMAT.template,
                parse=functools.partial(parse_qa_window, n=len(found)),
                schema=QA_SCHEMA,
                version=f"{P.QA.id}+{P.QA_FORMAT.id}+window",
                stage="qa",
                sample=sample,
            )
            for k, (question, expected) in enumerate(found):
                label, reasoning, answer = qa.value[k] if qa.ok else (None, None, None)  # type: ignore[index]
                pairs.append(QAPair(w, question, expected, answer, reasoning, label, qa.error, ctx))
            continue
        for question, expected in qg.value:
            # a fresh single-message conversation: QA must not see the summary or the QG exchange
            qa = _ask(
                doc_client,
                P.QA.render(**{"source text": source, "Question-answer pairs": f"Q1: {question} A1: {expected}"})
                + P.QA_FORMAT.template,
                parse=parse_qa,
                schema=QA_SCHEMA,
                version=f"{P.QA.id}+{P.QA_FORMAT.id}",
                stage="qa",
                sample=sample,
            )
            label, reasoning, answer = qa.value if qa.ok else (None, None, None)
            pairs.append(QAPair(w, question, expected, answer, reasoning, label, qa.error, ctx))
    return QgQaResult(tuple(pairs), _any_inconsistent([p.judgement for p in pairs]), usage=_close(client, ledger))


# -- one entry point for the app, batches, the CLI and the bench -------------------------------------
NLI_METHODS = ("summ-nli", "sent-nli", "qg-qa")
METHOD_LABELS = {
    "summ-nli": "Summ-NLI (whole summary)",
    "sent-nli": "Sent-NLI (each window of w sentences)",
    "qg-qa": "QG-QA (questions per window)",
}
WINDOWED = ("sent-nli", "qg-qa")
MethodResult = NliResult | SentNliResult | QgQaResult


def is_nli(method: str) -> bool:
    """Whether `method` is one of the paper-003 paradigms (the rest are DCR's evaluators)."""
    return method in NLI_METHODS


def prompt_versions(method: str, score_range: tuple[float, float] | None = None) -> dict[str, str]:
    """The prompt ids a method uses (recorded with runs and batches)."""
    fmt = P.JUDGEMENT_FORMAT.id
    if method == "summ-nli" and score_range is not None:
        return {
            "evaluator": P.SUMM_NLI_SCORE.id,
            "format": P.SCORE_FORMAT.id,
            "score_range": "{:g}-{:g}".format(*score_range),
        }
    return {
        "summ-nli": {"evaluator": P.SUMM_NLI.id, "format": fmt},
        "sent-nli": {"evaluator": P.SENT_NLI.id, "format": fmt},
        "qg-qa": {"qg": P.QG.id, "qa": P.QA.id, "qg_format": P.QG_FORMAT.id, "qa_format": P.QA_FORMAT.id},
    }[method]


def run_method(
    client: LLMClient,
    document: str,
    summary: str,
    method: str,
    *,
    window: int = 1,
    sample: int = 0,
    retrieval: Retrieval | None = None,
    fit_tokens: int | None = None,
    qa_per_pair: bool = False,
    score_range: tuple[float, float] | None = None,
) -> MethodResult:
    """Run one paradigm by name; `window` applies to Sent-NLI and QG-QA, `score_range` to Summ-NLI (its score
    mode). Retrieval and the budget a document must fit default to the settings (NLI_RETRIEVAL, NLI_FIT_TOKENS)."""
    from services.config import get_settings

    settings = get_settings()
    ctx = {
        "sample": sample,
        "retrieval": retrieval or settings.nli_retrieval,
        "fit_tokens": fit_tokens if fit_tokens is not None else settings.nli_fit_tokens,
    }
    if method == "summ-nli":
        return summ_nli(client, document, summary, score_range=score_range, **ctx)  # type: ignore[arg-type]
    if method == "sent-nli":
        return sent_nli(client, document, summary, window=window, **ctx)  # type: ignore[arg-type]
    if method == "qg-qa":
        return qg_qa(client, document, summary, window=window, qa_per_pair=qa_per_pair, **ctx)  # type: ignore[arg-type]
    raise ValueError(f"unknown method {method!r}; expected one of {', '.join(NLI_METHODS)}")


def _ctx_record(ctx: ContextSelection | None) -> dict[str, Any] | None:
    return None if ctx is None else {"indices": list(ctx.indices), "sentences": list(ctx.sentences)}


def _sentence_rows(sentences: list[str], spans: list[tuple[int, int]], units: list[list[dict]]) -> list[dict]:
    """Per summary sentence: the verdict of its window (Eq. 2/4 inside the window) and the window's reasons."""
    rows = []
    for (start, end), judged in zip(spans, units, strict=True):
        labels = [u["label"] for u in judged]
        verdict = _any_inconsistent(labels) or "unknown"
        reason = " · ".join(u["why"] for u in judged if u["why"]) or None
        errors = [u["error"] for u in judged if u["error"]]
        for i in range(start, end):
            rows.append(
                {
                    "index": i,
                    "text": sentences[i],
                    "verdict": verdict,
                    "reason": reason,
                    "error": "; ".join(errors) if errors else None,
                }
            )
    return rows


def result_record(result: MethodResult, method: str, summary: str, *, window: int = 1) -> dict[str, Any]:
    """A method's result as plain JSON: label, score (share of units judged consistent), the sentences with
    their window's verdict, and the windows, QA pairs or whole-summary judgement with the context used."""
    sentences = split_sentences(summary)
    rec: dict[str, Any] = {"method": method, "window": window if method in WINDOWED else None}
    if isinstance(result, NliResult):
        labels = [result.label]
        rec["summary"] = {
            "label": result.label,
            "reasoning": result.reasoning,
            "error": result.parse_error,
            "context": _ctx_record(result.context),
        }
        if result.score_range is not None:
            rec["summary"] |= {"score": result.score, "score_range": list(result.score_range)}
        rec["sentences"] = []
        n_units, n_failed = 1, int(result.parse_error is not None or result.label is None)
    elif isinstance(result, SentNliResult):
        labels = [w.label for w in result.windows]
        rec["windows"] = [
            {
                "start": w.start,
                "end": w.end,
                "text": " ".join(w.sentences),
                "label": w.label,
                "reasoning": w.reasoning,
                "error": w.parse_error,
                "context": _ctx_record(w.context),
            }
            for w in result.windows
        ]
        rec["sentences"] = _sentence_rows(
            sentences,
            [(w.start, w.end) for w in result.windows],
            [[{"label": w.label, "why": w.reasoning, "error": w.parse_error}] for w in result.windows],
        )
        n_units, n_failed = len(result.windows), result.n_failed
    else:
        labels = [p.judgement for p in result.pairs]
        rec["pairs"] = [
            {
                "window": p.window,
                "question": p.question,
                "expected_answer": p.expected_answer,
                "answer": p.answer,
                "reasoning": p.reasoning,
                "judgement": p.judgement,
                "error": p.parse_error,
                "context": _ctx_record(p.context),
            }
            for p in result.pairs
        ]
        spans = windows_of(sentences, window) if sentences else []
        units: list[list[dict]] = [[] for _ in spans]
        for p in result.pairs:
            if p.window < len(units):
                why = f"{p.question} → {p.expected_answer}: {p.judgement}" if p.question else None
                units[p.window].append({"label": p.judgement, "why": why, "error": p.parse_error})
        rec["sentences"] = _sentence_rows(sentences, spans, units)
        n_units, n_failed = len(result.pairs), result.n_failed
    read = [lab for lab in labels if lab is not None]
    rec["label"] = result.label
    # Share of units judged consistent; with a unit unread the document has no score, only a partial one.
    partial = sum(lab == "consistent" for lab in read) / len(read) if read else None
    rec["score"] = partial if len(read) == len(labels) else None
    rec["partial_score"] = partial
    if isinstance(result, NliResult) and result.score_range is not None:
        # Score mode: the model's score mapped onto 0-1 (an affine map, so Pearson with the human score is the
        # same as on the dataset's range); the raw score stays under "summary".
        low, high = result.score_range
        rec["score"] = rec["partial_score"] = None if result.score is None else (result.score - low) / (high - low)
    rec["n_units"] = n_units
    rec["n_failed"] = n_failed
    rec["usage"] = dict(result.usage)
    return rec
