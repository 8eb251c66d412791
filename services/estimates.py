"""Before a run on a remote model: how many calls, tokens, how long and what it costs; during a batch: an ETA
from the throughput measured over a recent window.

Tokens are estimated from text length (about 4 characters a token for English) plus each prompt's template;
answers from what this model answered before, else an assumed length. Time comes from this model's measured
latency (earlier runs and batches at the same endpoint) spread over the concurrency; with no measurement the
time is not guessed. Cost needs a price per million tokens (Settings); without one it is not guessed either.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import estimates as db
from services.config import BackendConfig, get_settings

CHARS_PER_TOKEN = 4.0
TEMPLATE_TOKENS = 350  # a ConsEval / DHP prompt's own instructions, beside the texts it quotes (text_estimate)
ASSUMED_ANSWER_TOKENS = 200  # an answer's length before this model has answered anything here
ETA_WINDOW = timedelta(minutes=2)
ETA_MIN_FINISHED = 3
SENTENCE_END = re.compile(r"[.!?](?:\s|$)")  # a rough count for a window's estimate; the run splits properly


def tokens_of(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Measured:
    """What this model has answered here before (requests not served from the cache)."""

    requests: int
    seconds_per_request: float | None
    prompt_tokens_per_request: float | None
    completion_tokens_per_request: float | None


def measured(engine: Engine, backend: BackendConfig) -> Measured:
    with Session(engine) as s:
        n, ms, pt, ct = db.model_call_totals(session=s, model=backend.model, base_url=backend.public_url)
    if n <= 0:
        return Measured(0, None, None, None)
    return Measured(n, ms / 1000 / n, pt / n if pt else None, ct / n if ct else None)


@dataclass(frozen=True)
class Estimate:
    """A run's expected calls, tokens, time and cost, with what each figure rests on."""

    calls: int
    input_tokens: int
    output_tokens: int
    seconds: float | None  # None: this model has no measured latency here yet
    cost_usd: float | None  # None: no price per million tokens is set
    n_measured: int  # requests the latency and answer length were measured on
    upper_bound: bool = False  # rounds that may stop early: the figures are at most these
    local: bool = False  # the embedded model: no charge
    largest_call_tokens: int = 0  # input tokens of the largest single call: an outlier's cost, seen before paying
    n_refused: int = 0  # documents over the input limit (max_input_chars): refused, never sent
    max_chars: int | None = None

    def summary(self) -> str:
        """One Markdown line for the page."""
        if self.calls == 0 and not self.upper_bound and not self.n_refused:
            return "Estimate: **no model call** (this evaluator runs offline): no token, no charge."
        about = "at most" if self.upper_bound else "about"
        parts = [
            f"{about} **{self.calls:,} call{'' if self.calls == 1 else 's'}**",
            f"**{_tokens(self.input_tokens)} input + {_tokens(self.output_tokens)} output tokens**",
        ]
        if self.seconds is None:
            parts.append("time: not measured for this model yet")
        else:
            parts.append(f"**{duration(self.seconds)}** (latency measured on {self.n_measured:,} earlier requests)")
        if self.local:
            parts.append("no charge (the embedded model runs here)")
        elif self.cost_usd is None:
            parts.append("cost: no price per million tokens set on Settings")
        else:
            usd = "under $0.01" if 0 < self.cost_usd < 0.005 else f"${self.cost_usd:,.2f}"
            parts.append(f"**{usd}** at the prices set on Settings")
        if self.calls and self.largest_call_tokens:
            parts.append(f"the largest call carries about **{_tokens(self.largest_call_tokens)} input tokens**")
        if self.n_refused:
            parts.append(
                f"**{self.n_refused:,} document{'' if self.n_refused == 1 else 's'} over the "
                f"{self.max_chars:,}-character limit** refused, not sent"
            )
        return "Estimate: " + " · ".join(parts) + " (cached answers cost no call)."

    def plain(self) -> str:
        """The summary as plain text (a terminal)."""
        return self.summary().replace("**", "")


def _tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    return f"{n:,}"


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass(frozen=True)
class Spent:
    """What a finished (or stopped) run actually used: tokens counted from the server's answers, priced at the
    prices per million tokens set on Settings for its model (None: none set, set for another model, or the
    tokens were not counted)."""

    input_tokens: int | None
    output_tokens: int | None
    price_in: float | None
    price_out: float | None
    local: bool = False  # the embedded model: no charge
    other_model: str | None = None  # the prices set are for this model, not the run's

    @property
    def cost_usd(self) -> float | None:
        if self.local:
            return 0.0
        if self.other_model is not None:
            return None
        if None in (self.input_tokens, self.output_tokens, self.price_in, self.price_out):
            return None
        return (self.input_tokens * self.price_in + self.output_tokens * self.price_out) / 1_000_000  # type: ignore[operator]

    def summary(self) -> str:
        """One Markdown line: the actual cost, or why it is not known."""
        if self.input_tokens is None or self.output_tokens is None:
            return "Cost: not known (its tokens were not counted: it ran before this version)."
        tokens = f"{self.input_tokens:,} input + {self.output_tokens:,} output tokens"
        if self.input_tokens == 0 and self.output_tokens == 0:
            return "Cost: nothing (no token was sent to a model)."
        if self.local:
            return f"Cost: no charge (the embedded model runs here) · {tokens}."
        if self.other_model is not None:
            return f"Cost: not known, the prices set on Settings are for `{self.other_model}` · {tokens}."
        usd = self.cost_usd
        if usd is None:
            return f"Cost: not known, no price per million tokens is set on Settings · {tokens}."
        shown = "under $0.01" if 0 < usd < 0.005 else f"${usd:,.2f}"
        return (
            f"Cost: **{shown}** · {tokens} at ${self.price_in:g} / ${self.price_out:g} per million (input / "
            "output, the prices set on Settings)."
        )


def spent(
    prices: BackendConfig,
    *,
    model: str,
    base_url: str | None,
    kind: str,
    input_tokens: int | None,
    output_tokens: int | None,
) -> Spent:
    """A run's actual tokens priced at the prices set on Settings (`prices`: the backend in use), when they are
    for the same model at the same endpoint (prices are not stored with a run: they are no part of its record)."""
    if kind == "embedded":
        return Spent(input_tokens, output_tokens, None, None, local=True)
    same = prices.model == model and (prices.public_url or None) == (base_url or None)
    return Spent(
        input_tokens,
        output_tokens,
        prices.price_input_per_million,
        prices.price_output_per_million,
        other_model=None if same else prices.model,
    )


def calls_text(calls: int | None, answered: int | None) -> tuple[str, str]:
    """("64 answered", "144 retries") for a run's requests; the retries "not counted" when they were not."""
    if calls is None:
        return "—", "—"
    if answered is None:
        return f"{calls:,} sent", "not counted"
    return f"{answered:,}", f"{calls - answered:,}"


def cost(backend: BackendConfig, input_tokens: int, output_tokens: int) -> float | None:
    """USD at the backend's prices; None when either price is unknown."""
    pi, po = backend.price_input_per_million, backend.price_output_per_million
    if pi is None or po is None:
        return None
    return (input_tokens * pi + output_tokens * po) / 1_000_000


def estimate(
    backend: BackendConfig,
    m: Measured,
    *,
    calls: int,
    input_tokens: int,
    concurrency: int,
    upper_bound: bool = False,
) -> Estimate:
    """Figures for `calls` requests carrying `input_tokens` in all, `concurrency` at a time."""
    per_answer = m.completion_tokens_per_request or ASSUMED_ANSWER_TOKENS
    output_tokens = math.ceil(calls * min(per_answer, backend.max_tokens))
    seconds = None
    if m.seconds_per_request is not None:
        seconds = calls * m.seconds_per_request / max(1, concurrency)
    return Estimate(
        calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        seconds=seconds,
        cost_usd=cost(backend, input_tokens, output_tokens),
        n_measured=m.requests,
        upper_bound=upper_bound,
        local=backend.is_embedded,
    )


# -- what a method asks per document -----------------------------------------------------------------------
_SLOT = re.compile(r"\{[\w ]+\}")  # a template's placeholders ("{candidate}", "{source text}"), not JSON braces


def _own_tokens(*templates: str) -> int:
    """A call's own prompt tokens: its templates with their placeholders taken out (the texts are counted apart)."""
    return tokens_of(sum(len(_SLOT.sub("", t)) for t in templates))


def template_tokens(method: str, *, amc: str = "rule", task: str = "summarization") -> int:
    """The tokens a method's call carries besides the texts it quotes, measured on the method's own prompts
    (services/prompts): DCE (with an LLM converter, the mean of its two calls), the paragraph evaluator,
    Summ-NLI and Sent-NLI with their JSON answer lines, QG-QA the mean of its question and answer calls."""
    from services.prompts import dcr as D
    from services.prompts import nli as N

    if method == "evidence":
        return 0
    if method == "paragraph":
        return _own_tokens(D.PARAGRAPH_DCE.template)
    if method == "summ-nli":
        return _own_tokens(N.SUMM_NLI.template, N.JUDGEMENT_FORMAT.template)
    if method == "sent-nli":
        return _own_tokens(N.SENT_NLI.template, N.JUDGEMENT_FORMAT.template)
    if method == "qg-qa":
        return round(
            (_own_tokens(N.QG.template, N.QG_FORMAT.template) + _own_tokens(N.QA.template, N.QA_FORMAT.template)) / 2
        )
    dce = {"semantic": D.SEMANTIC_DCE, "custom": D.CUSTOM_DCE}.get(task, D.SUMMARIZATION_DCE)
    own = _own_tokens(dce.template)
    return round((own + _own_tokens(D.AMC.template)) / 2) if amc == "llm" else own


def calls_per_document(method: str, *, n_sentences: Any, window: int = 1, amc: str = "rule", rounds: int = 0) -> Any:
    """Model calls one document takes: DCE (+ an LLM converter) a round, an improver and a new judgement per
    improvement round; Summ-NLI one; Sent-NLI one a window; QG-QA two a window (questions, then answers);
    the evidence checker none. `n_sentences` an int (an int back) or an integer array (an array, per document)."""
    sentences = np.maximum(1, n_sentences)
    windows = -(-sentences // max(1, window))  # the ceiling of sentences / window, in integers
    if method == "evidence":
        calls = 0 * windows
    elif method == "summ-nli":
        calls = 0 * windows + 1
    elif method == "sent-nli":
        calls = windows
    elif method == "qg-qa":
        calls = 2 * windows
    else:
        per_round = 1 + (1 if amc == "llm" else 0)
        calls = 0 * windows + per_round + rounds * (1 + per_round)
    return int(calls) if np.ndim(calls) == 0 else calls


def document_estimate(
    backend: BackendConfig,
    m: Measured,
    sizes: Sequence[tuple[int, int, int]],
    *,
    method: str,
    window: int = 1,
    amc: str = "rule",
    rounds: int = 0,
    concurrency: int = 1,
    max_chars: int | None = None,
) -> Estimate:
    """Figures for a method over documents of these sizes: (reference chars, candidate chars, sentences).

    A document whose reference or candidate is over `max_chars` is counted as refused (never sent), not in the
    calls and tokens. Counted over arrays: the start form's estimate is redrawn at every render of the
    Batches page (0.6 s at 100,000 documents one by one)."""
    table = np.asarray(sizes, dtype=np.int64).reshape(-1, 3)
    ref_chars, cand_chars, n_sent = table.T
    sent = np.ones(len(table), dtype=bool)
    if max_chars is not None:
        sent = np.maximum(ref_chars, cand_chars) <= max_chars
    n = calls_per_document(method, n_sentences=n_sent[sent], window=window, amc=amc, rounds=rounds)
    # tokens_of over the array: the same division and ceiling as math.ceil(chars / CHARS_PER_TOKEN)
    own = template_tokens(method, amc=amc)  # each method's prompt measured, not one size for all
    per_call = np.ceil((ref_chars[sent] + cand_chars[sent]) / CHARS_PER_TOKEN).astype(np.int64) + own
    calls = int(n.sum())
    input_tokens = int((n * per_call).sum())
    largest = int(np.max(np.where(n > 0, per_call, 0), initial=0))
    est = estimate(
        backend,
        m,
        calls=calls,
        input_tokens=input_tokens,
        concurrency=concurrency,
        upper_bound=rounds > 0 and method not in ("summ-nli", "sent-nli", "qg-qa", "evidence"),
    )
    return replace(est, largest_call_tokens=largest, n_refused=int((~sent).sum()), max_chars=max_chars)


def dataset_sizes(engine: Engine, dataset_id: int, *, limit: int | None = None) -> list[tuple[int, int, int]]:
    """Per item, in order: reference characters, candidate characters, candidate sentences."""
    with Session(engine) as s:
        return db.dataset_sizes(session=s, dataset_id=dataset_id, limit=limit)


def batch_estimate(
    engine: Engine,
    backend: BackendConfig,
    dataset_id: int,
    *,
    method: str,
    window: int = 1,
    amc: str = "rule",
    rounds: int = 0,
    concurrency: int = 1,
    item_limit: int | None = None,
    repeats: int = 1,
    sizes: list[tuple[int, int, int]] | None = None,
) -> Estimate:
    """Figures for a batch (or its repeats) over a stored dataset, before it starts. `sizes`: the dataset's
    (dataset_sizes), when the caller has them (a dataset never changes once imported)."""
    if sizes is None:
        sizes = dataset_sizes(engine, dataset_id, limit=item_limit)
    return document_estimate(
        backend,
        measured(engine, backend),
        sizes * max(1, repeats),
        method=method,
        window=window,
        amc=amc,
        rounds=rounds,
        concurrency=concurrency,
        max_chars=get_settings().max_input_chars,
    )


def text_estimate(
    engine: Engine, backend: BackendConfig, *, prompt_chars: int, calls: int, concurrency: int
) -> Estimate:
    """Figures for `calls` requests whose prompts hold `prompt_chars` characters in all (ConsEval, DHP)."""
    return estimate(
        backend,
        measured(engine, backend),
        calls=calls,
        input_tokens=tokens_of(prompt_chars) + calls * TEMPLATE_TOKENS,
        concurrency=concurrency,
    )


# -- a running batch's ETA ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Throughput:
    items_per_s: float | None  # None: too few items finished in the window to measure
    n_recent: int
    window_s: float
    eta_s: float | None


def throughput(finished_at: Sequence[datetime], now: datetime, left: int, window: timedelta = ETA_WINDOW) -> Throughput:
    """Items finished per second over the recent window (from the first finish in it to now, so a stall
    slows the rate down at once), and the time the `left` items take at that rate."""
    start = now - window
    recent = [t for t in finished_at if t >= start]
    return window_throughput(len(recent), min(recent, default=None), now, left, window)


def window_throughput(
    n_recent: int, first: datetime | None, now: datetime, left: int, window: timedelta = ETA_WINDOW
) -> Throughput:
    """`throughput` from what it rests on: the items finished in the window and when the first of them did."""
    if n_recent < ETA_MIN_FINISHED or first is None:
        return Throughput(None, n_recent, window.total_seconds(), None)
    span = max((now - first).total_seconds(), 1e-3)
    rate = (n_recent - 1) / span
    if rate <= 0:
        return Throughput(None, n_recent, span, None)
    return Throughput(rate, n_recent, span, left / rate if left else 0.0)


def batch_throughput(engine: Engine, batch_id: int, left: int, now: datetime) -> Throughput:
    with Session(engine) as s:
        n, first = db.recent_finishes(session=s, batch_id=batch_id, since=now - ETA_WINDOW)
    if first is not None and first.tzinfo is None:
        first = first.replace(tzinfo=now.tzinfo)
    return window_throughput(n, first, now, left)


def single_estimate(
    engine: Engine, backend: BackendConfig, reference: str, candidate: str, *, method: str, window: int, amc: str
) -> Estimate:
    """Figures for judging one pair (round 0: Improve is a step of its own)."""
    n_sentences = max(1, len(SENTENCE_END.findall(candidate.strip())))
    return document_estimate(
        backend,
        measured(engine, backend),
        [(len(reference), len(candidate), n_sentences)],
        method=method,
        window=window,
        amc=amc,
    )
