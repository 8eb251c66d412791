"""Zero-shot factual-inconsistency paradigms of paper 003: Summ-NLI (Eq. 1), Sent-NLI (Eq. 2), QG-QA (Eqs. 3-4).

Pure domain code: every model call goes through `LLMClient.chat_json`; nothing here touches the
database or the UI. A reply that skips the judgement, gives no questions or judges one question
twice is recorded as a parse failure of its window or pair; no verdict is guessed for it.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from services.llm import CallResult, LLMClient, UsageLedger
from services.prompts import nli as P
from services.text import estimate_tokens, split_sentences

Label = Literal["consistent", "inconsistent"]

CONTEXT_BUDGET_TOKENS = 1024  # Appendix B, Table 8: Summ-Alignment
WINDOW_CONTEXT_SENTENCES = 5  # Appendix B, Table 8: Sent-Alignment n
# Retrieval (Appendix B) is for long documents (GovReport ~3.8k words, SQuALITY ~5k): it runs when a document
# does not fit this many estimated tokens, or when asked. Ordinary news articles (CNN/DM) are read whole.
FIT_TOKENS = 4096
Retrieval = Literal["auto", "always", "never"]

_JUDGEMENT_SCHEMA = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "judgement": {"type": "string", "enum": ["Consistent", "Inconsistent"]},
    },
    "required": ["reasoning", "judgement"],
}
_QG_SCHEMA = {
    "type": "object",
    "properties": {
        "entities": {"type": "array", "items": {"type": "string"}},
        "pairs": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"question": {"type": "string"}, "answer": {"type": "string"}},
                "required": ["question", "answer"],
            },
        },
    },
    "required": ["pairs"],
}
_QA_SCHEMA = {
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "question": {"type": "string"},
                    "answer": {"type": "string"},
                    "reasoning": {"type": "string"},
                    "judgement": {"type": "string", "enum": ["Consistent", "Inconsistent"]},
                },
                "required": ["reasoning", "judgement"],
            },
        }
    },
    "required": ["results"],
}


# -- results ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ContextSelection:
    """Document sentences retrieved for a target (Appendix B); `indices` are in document order."""

    indices: tuple[int, ...]
    sentences: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


@dataclass(frozen=True)
class NliResult:
    """Summ-NLI (Eq. 1): one judgement of the whole summary."""

    label: Label | None
    reasoning: str | None
    parse_error: str | None
    context: ContextSelection | None = None  # None: the whole document was the context
    usage: dict[str, Any] = field(default_factory=dict)


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


# -- parsing ---------------------------------------------------------------------------------------
def parse_judgement(value: Any) -> Label:
    """The judgement field, read strictly: "Consistent" or "Inconsistent" (any case), nothing else."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValueError("no Judgement given")
    if not isinstance(value, str):
        raise ValueError(f"Judgement is not a word: {value!r}")
    word = value.strip().lower()
    if word not in ("consistent", "inconsistent"):
        raise ValueError(f"Judgement must be Consistent or Inconsistent, not {value!r}")
    return word  # type: ignore[return-value]


def _reasoning(data: dict) -> str:
    value = data.get("reasoning")
    if value is None:
        value = data.get("reasoning process", data.get("reasoning_process", ""))
    return value if isinstance(value, str) else str(value)


def parse_nli(data: Any) -> tuple[Label, str]:
    """A Figure 4/5 answer as (label, reasoning); raises when the Judgement is missing or unreadable."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object with reasoning and judgement")
    return parse_judgement(data.get("judgement", data.get("Judgement"))), _reasoning(data)


def parse_qg(data: Any) -> list[tuple[str, str]]:
    """Figure 6 (question, answer) pairs; raises when there are none or one is incomplete."""
    if not isinstance(data, dict) or not isinstance(data.get("pairs"), list):
        raise ValueError("expected a JSON object with a list of pairs")
    out: list[tuple[str, str]] = []
    for item in data["pairs"]:
        if not isinstance(item, dict):
            raise ValueError("each pair must be an object with question and answer")
        q, a = item.get("question"), item.get("answer")
        if not isinstance(q, str) or not q.strip() or not isinstance(a, str) or not a.strip():
            raise ValueError("a pair lacks its question or its answer")
        out.append((q.strip(), a.strip()))
    if not out:
        raise ValueError("no questions generated")
    return out


def parse_qa_window(data: Any, n: int) -> list[tuple[Label, str, str | None]]:
    """A Figure 7 reply to a window's n question-answer pairs, in order: exactly one judgement per pair."""
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError("expected a JSON object with a list of results")
    results = data["results"]
    if len(results) != n:
        raise ValueError(f"{n} question(s) were asked, {len(results)} judgement(s) given")
    out = []
    for item in results:
        if not isinstance(item, dict):
            raise ValueError("each result must be an object")
        answer = item.get("answer")
        restated = answer if isinstance(answer, str) else None
        out.append((parse_judgement(item.get("judgement")), _reasoning(item), restated))
    return out


def qa_pairs_text(pairs: list[tuple[str, str]]) -> str:
    """Figure 7's pair list: "Q1: ... A1: ..." one pair a line."""
    return "\n\n".join(f"Q{i}: {q} A{i}: {a}" for i, (q, a) in enumerate(pairs, 1))


def parse_qa(data: Any) -> tuple[Label, str, str | None]:
    """A Figure 7 reply to one question as (label, reasoning, restated answer); exactly one judgement."""
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError("expected a JSON object with a list of results")
    results = data["results"]
    if not results:
        raise ValueError("the question was not answered")
    if len(results) > 1:
        raise ValueError(f"one question was asked, {len(results)} judgements given")
    item = results[0]
    if not isinstance(item, dict):
        raise ValueError("the result must be an object")
    answer = item.get("answer")
    return parse_judgement(item.get("judgement")), _reasoning(item), answer if isinstance(answer, str) else None


# -- long documents (Appendix B) --------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from rouge_score import tokenizers

    # rouge-score's own tokenizer and stemmer, so these recalls match its ROUGE-1/ROUGE-2
    return tokenizers.DefaultTokenizer(use_stemmer=True)


def _ngrams(text: str) -> tuple[Counter, Counter]:
    tokens = _tokenizer().tokenize(text)
    return Counter(tokens), Counter(zip(tokens, tokens[1:], strict=False))


def _recall(target: tuple[Counter, Counter], picked: tuple[Counter, Counter]) -> float:
    """ROUGE-1 recall + ROUGE-2 recall of the picked n-grams toward the target's."""
    total = 0.0
    for want, have in zip(target, picked, strict=True):
        n = sum(want.values())
        if n:
            total += sum(min(c, have[g]) for g, c in want.items()) / n
    return total


def select_context(
    document: str | list[str],
    target: str,
    *,
    budget_tokens: int | None = None,
    n_sentences: int | None = None,
) -> ContextSelection:
    """Greedily pick document sentences maximizing ROUGE-1 + ROUGE-2 recall toward `target`.

    Stops at `n_sentences` sentences, or before the picked text would exceed `budget_tokens`
    (default 1024, when neither is given), or when no sentence adds recall.
    """
    if budget_tokens is None and n_sentences is None:
        budget_tokens = CONTEXT_BUDGET_TOKENS
    sentences = split_sentences(document) if isinstance(document, str) else list(document)
    want = _ngrams(target)
    grams = [_ngrams(sent) for sent in sentences]
    have: tuple[Counter, Counter] = (Counter(), Counter())
    chosen: list[int] = []
    used = 0
    best = 0.0
    while n_sentences is None or len(chosen) < n_sentences:
        pick, pick_score = None, best
        for i, sent in enumerate(sentences):
            if i in chosen:
                continue
            if budget_tokens is not None and used + estimate_tokens(sent) > budget_tokens:
                continue
            score = _recall(want, (have[0] + grams[i][0], have[1] + grams[i][1]))
            if score > pick_score + 1e-12:
                pick, pick_score = i, score
        if pick is None:
            break
        chosen.append(pick)
        have = (have[0] + grams[pick][0], have[1] + grams[pick][1])
        used += estimate_tokens(sentences[pick])
        best = pick_score
    order = tuple(sorted(chosen))
    return ContextSelection(indices=order, sentences=tuple(sentences[i] for i in order))


def needs_retrieval(document: str, *, retrieval: Retrieval = "auto", fit_tokens: int = FIT_TOKENS) -> bool:
    """Whether Appendix B's retrieval applies: asked for, or the document does not fit `fit_tokens`."""
    if retrieval != "auto":
        return retrieval == "always"
    return estimate_tokens(document) > fit_tokens


def _context(
    document: str, target: str, budget_tokens: int, n_sentences: int | None, use: bool = True
) -> ContextSelection | None:
    """The retrieved context when retrieval applies (`use`), else None (the document is read whole)."""
    if not use:
        return None
    if n_sentences is None:
        return select_context(document, target, budget_tokens=budget_tokens)
    return select_context(document, target, n_sentences=n_sentences)


def windows_of(sentences: list[str], window: int) -> list[tuple[int, int]]:
    """Consecutive, non-overlapping windows of `window` sentences as [start, end) spans."""
    if window < 1:
        raise ValueError("window must be at least 1")
    return [(i, min(i + window, len(sentences))) for i in range(0, len(sentences), window)]


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
) -> NliResult:
    """Summ-NLI (Eq. 1): the whole summary judged at once (Figure 4)."""
    doc_client, ledger = _per_document(client)
    use = needs_retrieval(document, retrieval=retrieval, fit_tokens=fit_tokens)
    ctx = _context(document, summary, budget_tokens, None, use)
    prompt = P.SUMM_NLI.render(**{"source text": ctx.text if ctx else document, "summary": summary})
    res = _ask(
        doc_client,
        prompt + P.JUDGEMENT_FORMAT.template,
        parse=parse_nli,
        schema=_JUDGEMENT_SCHEMA,
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
        ctx = _context(document, text, budget_tokens, n_sentences, use)
        prompt = P.SENT_NLI.render(**{"source text": ctx.text if ctx else document, "Sentence": text})
        res = _ask(
            doc_client,
            prompt + P.JUDGEMENT_FORMAT.template,
            parse=parse_nli,
            schema=_JUDGEMENT_SCHEMA,
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
            schema=_QG_SCHEMA,
            version=f"{P.QG.id}+{P.QG_FORMAT.id}",
            stage="qg",
            sample=sample,
        )
        if not qg.ok:
            pairs.append(QAPair(w, None, None, None, None, None, qg.error))
            continue
        ctx = _context(document, text, budget_tokens, n_sentences, use)
        source = ctx.text if ctx else document
        if not qa_per_pair:
            found: list[tuple[str, str]] = qg.value  # type: ignore[assignment]
            qa = _ask(
                doc_client,
                P.QA.render(**{"source text": source, "Question-answer pairs": qa_pairs_text(found)})
                + P.QA_FORMAT.template,
                parse=functools.partial(parse_qa_window, n=len(found)),
                schema=_QA_SCHEMA,
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
                schema=_QA_SCHEMA,
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


def prompt_versions(method: str) -> dict[str, str]:
    """The prompt ids a method uses (recorded with runs and batches)."""
    fmt = P.JUDGEMENT_FORMAT.id
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
) -> MethodResult:
    """Run one paradigm by name; `window` applies to Sent-NLI and QG-QA. Retrieval and the budget a document
    must fit default to the settings (NLI_RETRIEVAL, NLI_FIT_TOKENS)."""
    from services.config import get_settings

    settings = get_settings()
    ctx = {
        "sample": sample,
        "retrieval": retrieval or settings.nli_retrieval,
        "fit_tokens": fit_tokens if fit_tokens is not None else settings.nli_fit_tokens,
    }
    if method == "summ-nli":
        return summ_nli(client, document, summary, **ctx)  # type: ignore[arg-type]
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
    rec["n_units"] = n_units
    rec["n_failed"] = n_failed
    rec["usage"] = dict(result.usage)
    return rec
