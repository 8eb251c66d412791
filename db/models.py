"""Every table of the app (SQLModel), with Base / table / Public variants where pages read them."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, CheckConstraint, Column, Index, SmallInteger, String, Text, UniqueConstraint, event
from sqlmodel import Field, SQLModel

from db.redact import redact_url


def utcnow() -> datetime:
    return datetime.now(UTC)


class Document(SQLModel, table=True):
    """A reference or candidate text, stored once by its hash."""

    id: int | None = Field(default=None, primary_key=True)
    sha256: str = Field(index=True, unique=True, max_length=64)
    text: str = Field(sa_column=Column(Text, nullable=False))
    n_chars: int = 0
    created_at: datetime = Field(default_factory=utcnow)


class RunBase(SQLModel):
    title: str = Field(default="", max_length=200)
    source: str = Field(default="app", max_length=20)  # app | cli
    task: str = Field(default="summarization", max_length=20)
    criteria: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    method: str = Field(default="dce-amc", max_length=20)
    amc: str = Field(default="rule", max_length=10)
    max_rounds: int = 3
    backend_kind: str = Field(default="embedded", max_length=20)
    model: str = Field(default="", max_length=200)
    base_url: str | None = Field(default=None, max_length=500)
    params: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    prompt_versions: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class Run(RunBase, table=True):
    """One evaluation of a candidate against a reference, with its rounds."""

    id: int | None = Field(default=None, primary_key=True)
    reference_id: int = Field(foreign_key="document.id", index=True)
    candidate_id: int = Field(foreign_key="document.id", index=True)
    status: str = Field(default="running", max_length=20)  # running | done | failed
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    initial_score: float | None = None
    final_score: float | None = None
    n_rounds: int = 0
    created_at: datetime = Field(default_factory=utcnow, index=True)
    updated_at: datetime = Field(default_factory=utcnow)


class RunCreate(RunBase):
    reference: str
    candidate: str


class RunPublic(RunBase):
    id: int
    status: str
    error: str | None
    initial_score: float | None
    final_score: float | None
    n_rounds: int
    created_at: datetime
    reference_id: int
    candidate_id: int


class EvalRound(SQLModel, table=True):
    """Round r of a run: the candidate text, its Eq. 3 score and what the improver proposed."""

    __tablename__ = "eval_round"

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="run.id", index=True)
    idx: int = 0
    text: str = Field(sa_column=Column(Text, nullable=False))
    k: int = 0
    alpha: float = 0.0
    beta: float = 0.0
    z: float | None = None
    z_hat: float | None = None
    n_judged: int = 0
    n_unknown: int = 0
    model_is_consistent: bool | None = None
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    improve_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    notes: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    extras: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    amc_agree: int | None = None
    amc_compared: int | None = None
    created_at: datetime = Field(default_factory=utcnow)


class SentenceRow(SQLModel, table=True):
    """A candidate sentence's verdict in one round."""

    __tablename__ = "sentence_verdict"

    id: int | None = Field(default=None, primary_key=True)
    round_id: int = Field(foreign_key="eval_round.id", index=True)
    idx: int = 0
    text: str = Field(sa_column=Column(Text, nullable=False))
    verdict: str = Field(default="unknown", max_length=20)
    reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    mark: int | None = None
    rule_mark: int | None = None
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


class RewriteRow(SQLModel, table=True):
    """An improver rewrite of one sentence, accepted or rejected by the user."""

    __tablename__ = "rewrite"

    id: int | None = Field(default=None, primary_key=True)
    round_id: int = Field(foreign_key="eval_round.id", index=True)
    idx: int = 0
    before: str = Field(sa_column=Column(Text, nullable=False))
    after: str = Field(sa_column=Column(Text, nullable=False))
    reason: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    accepted: bool = True


class LLMCacheEntry(SQLModel, table=True):
    """A model answer keyed by model, prompt version, messages, parameters and sample index."""

    __tablename__ = "llm_cache"

    key: str = Field(primary_key=True, max_length=64)
    model: str = Field(default="", max_length=200)
    prompt_version: str = Field(default="", max_length=100)
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class UsageEvent(SQLModel, table=True):
    """One logical model call of a run: requests sent, tokens, latency, cache hit, error."""

    __tablename__ = "usage_event"

    id: int | None = Field(default=None, primary_key=True)
    run_id: int | None = Field(default=None, foreign_key="run.id", index=True)
    stage: str = Field(default="", max_length=40)
    prompt_version: str = Field(default="", max_length=100)
    cached: bool = False
    requests: int = 0
    answered: int | None = 0  # requests that got an answer (the rest were retried or failed); None: not counted
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(default_factory=utcnow)


# -- datasets and batches ----------------------------------------------------------------------
class DatasetBase(SQLModel):
    name: str = Field(max_length=200)
    format: str = Field(default="jsonl", max_length=20)  # qags | summeval | paws | jsonl | csv
    task: str = Field(default="summarization", max_length=20)
    sha256: str = Field(index=True, max_length=64)
    label_kinds: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    meta: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class Dataset(DatasetBase, table=True):
    """An imported dataset: items with references, candidates and human judgments."""

    id: int | None = Field(default=None, primary_key=True)
    n_items: int = 0
    n_rejected: int = 0
    rejected: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class DatasetPublic(DatasetBase):
    id: int
    n_items: int
    n_rejected: int
    created_at: datetime


class DatasetItem(SQLModel, table=True):
    """One reference/candidate pair with whatever human judgments the dataset carries."""

    __tablename__ = "dataset_item"

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    idx: int = 0
    # Any length, kept whole: readers, cards and the CLI key items by it. TEXT on PostgreSQL; SQLite keeps the
    # column's old declared length, which it never enforces (changing it would rebuild the table).
    external_id: str = Field(
        default="", sa_column=Column(String(200).with_variant(Text(), "postgresql"), nullable=False, default="")
    )
    reference_id: int = Field(foreign_key="document.id", index=True)
    candidate: str = Field(sa_column=Column(Text, nullable=False))
    # The candidate's sentences, split once at import (or as the dataset gives them).
    sentences: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    human_score: float | None = None
    human_label: int | None = None  # 1 consistent / 0 inconsistent
    # The system (or prompt, model, version) that wrote the candidate: a column chosen at import.
    system: str | None = Field(default=None, max_length=200, index=True)
    # Per sentence: {"rater id": 1 or 0, ...} (e.g. QAGS workers' yes/no).
    sentence_labels: list[dict[str, int]] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    extra: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class BatchBase(SQLModel):
    name: str = Field(default="", max_length=200)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    task: str = Field(default="summarization", max_length=20)
    criteria: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    method: str = Field(default="dce-amc", max_length=20)
    amc: str = Field(default="rule", max_length=10)
    max_rounds: int = 0
    concurrency: int = 8
    item_limit: int | None = None
    backend_kind: str = Field(default="embedded", max_length=20)
    model: str = Field(default="", max_length=200)
    base_url: str | None = Field(default=None, max_length=500)
    params: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    prompt_versions: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class Batch(BatchBase, table=True):
    """A batch run of one method over a dataset, processed by background workers."""

    id: int | None = Field(default=None, primary_key=True)
    status: str = Field(default="queued", max_length=20)  # queued | running | done | cancelled
    cancel_requested: bool = False
    # "Re-run failed": only the items marked `refresh` are claimed; the others wait for Resume.
    retry_only: bool = False
    n_items: int = 0
    created_at: datetime = Field(default_factory=utcnow, index=True)
    enqueued_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


class BatchPublic(BatchBase):
    id: int
    status: str
    cancel_requested: bool
    retry_only: bool = False
    n_items: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class BatchItem(SQLModel, table=True):
    """One dataset item in a batch: its state, scores, usage and the full result."""

    __tablename__ = "batch_item"
    # A running batch's page counts its items by state and sums their usage every 1.5 s (db.batches.status_totals),
    # and measures its throughput from recent finishes (db.estimates.recent_finishes). These two indexes hold every
    # column those queries read, so they never read the rows with their results: 198 -> 43 ms a poll at 50,000
    # items on SQLite.
    __table_args__ = (
        Index("ix_batch_item_finishes", "batch_id", "status", "updated_at"),
        Index(
            "ix_batch_item_totals",
            "batch_id",
            "status",
            "calls",
            "cache_hits",
            "prompt_tokens",
            "completion_tokens",
            "answered",
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    batch_id: int = Field(foreign_key="batch.id", index=True)
    item_id: int = Field(foreign_key="dataset_item.id", index=True)
    status: str = Field(default="pending", max_length=20, index=True)  # pending | running | done | failed
    worker: str | None = Field(default=None, max_length=100)
    attempts: int = 0
    # Ask the model again rather than read the cache, and replace the cached answer (a failed item re-run).
    refresh: bool = False
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    score: float | None = None  # Ẑ of round 0
    final_score: float | None = None  # Ẑ of the last round
    n_sentences: int = 0
    n_unknown: int = 0
    n_rounds: int = 0
    calls: int = 0
    answered: int | None = 0  # of `calls`, the requests that got an answer; None: written before it was counted
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    # Rounds with sentences, verdicts, reasons, marks and rewrites (the CLI's output record).
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    # What the pages read of the result, written with it (services/result_columns.py): the first round's sentence
    # verdicts (a letter each: c, i, u; NULL: not written with the result, read it from there), its
    # model_is_consistent (1, 0, -1 undecided, NULL none) and the evidence checker's prediction.
    verdicts: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    consistent: int | None = Field(default=None, sa_column=Column(SmallInteger, nullable=True))
    checker_score: float | None = None
    updated_at: datetime = Field(default_factory=utcnow)


class BatchUsage(SQLModel, table=True):
    """One model call made for a batch item, whatever became of its answer: a failed attempt, a retry, an
    answer that could not be read, an item taken over or stopped before its result was written. The batch's
    totals (its items' usage columns, which add every attempt's) equal the sum of these rows."""

    __tablename__ = "batch_usage"

    id: int | None = Field(default=None, primary_key=True)
    batch_id: int = Field(index=True)  # no foreign key: a deleted batch's rows go with it (db.batches)
    batch_item_id: int
    attempt: int | None = None  # the claim the call was made under
    stage: str = Field(default="", max_length=40)
    prompt_version: str = Field(default="", max_length=100)
    cached: bool = False
    requests: int = 0
    answered: int | None = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(default_factory=utcnow)


class WorkerHeartbeat(SQLModel, table=True):
    """A worker that is alive (or was): items it claimed return to the queue when it goes quiet."""

    __tablename__ = "worker_heartbeat"

    id: str = Field(primary_key=True, max_length=100)
    host: str = Field(default="", max_length=200)
    pid: int = 0
    started_at: datetime = Field(default_factory=utcnow)
    heartbeat_at: datetime = Field(default_factory=utcnow, index=True)


class BaselineScore(SQLModel, table=True):
    """A local baseline metric of one dataset item (ROUGE, embedding similarity), computed once."""

    __tablename__ = "baseline_score"

    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="dataset_item.id", index=True)
    metric: str = Field(max_length=40, index=True)
    value: float | None = None


# -- annotations ---------------------------------------------------------------------------------
def new_token() -> str:
    """An unguessable personal token for an annotator's link."""
    return secrets.token_urlsafe(24)


class AnnotatorBase(SQLModel):
    name: str = Field(max_length=100, unique=True, index=True)


class Annotator(AnnotatorBase, table=True):
    """A person who labels sentences; the token in their personal link identifies them."""

    id: int | None = Field(default=None, primary_key=True)
    token: str = Field(default_factory=new_token, max_length=64, unique=True, index=True)
    created_at: datetime = Field(default_factory=utcnow)


class AnnotatorPublic(AnnotatorBase):
    id: int
    created_at: datetime


class SentenceLabelBase(SQLModel):
    # The target: a run's round (Evaluate / History) or a dataset item; exactly one of the two is set.
    run_id: int | None = Field(default=None, foreign_key="run.id", index=True, ondelete="CASCADE")
    round_idx: int | None = None
    dataset_item_id: int | None = Field(default=None, foreign_key="dataset_item.id", index=True, ondelete="CASCADE")
    sentence_idx: int = 0
    label: int = 1  # 1 consistent / 0 inconsistent
    note: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))


class SentenceLabel(SentenceLabelBase, table=True):
    """One annotator's label of one sentence; the model's verdicts live elsewhere and are never touched."""

    __tablename__ = "sentence_label"
    # NULLs are distinct in a unique constraint, so each constraint only binds rows of its own target kind.
    __table_args__ = (
        UniqueConstraint("annotator_id", "dataset_item_id", "sentence_idx", name="uq_sentence_label_item"),
        UniqueConstraint("annotator_id", "run_id", "round_idx", "sentence_idx", name="uq_sentence_label_run"),
        CheckConstraint(
            "(run_id IS NOT NULL AND round_idx IS NOT NULL AND dataset_item_id IS NULL) "
            "OR (run_id IS NULL AND round_idx IS NULL AND dataset_item_id IS NOT NULL)",
            name="ck_sentence_label_one_target",
        ),
        CheckConstraint("label IN (0, 1)", name="ck_sentence_label_label"),
    )

    id: int | None = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True, ondelete="CASCADE")
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class SentenceLabelPublic(SentenceLabelBase):
    id: int
    annotator_id: int
    created_at: datetime
    updated_at: datetime


class AnnotationAssignment(SQLModel, table=True):
    """A dataset item given to an annotator to label; done once every sentence has their label."""

    __tablename__ = "annotation_assignment"
    __table_args__ = (
        UniqueConstraint("dataset_item_id", "annotator_id", name="uq_annotation_assignment_item_annotator"),
    )

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True, ondelete="CASCADE")
    dataset_item_id: int = Field(foreign_key="dataset_item.id", index=True, ondelete="CASCADE")
    annotator_id: int = Field(foreign_key="annotator.id", index=True, ondelete="CASCADE")
    status: str = Field(default="pending", max_length=20)  # pending | done
    # How the item was chosen (one of LABEL_ORIGINS): "random" and "uncertain" by Label next, "manual" by hand
    # (the Annotate page's assignment), "unknown" for assignments made before this was recorded.
    origin: str = Field(default="manual", max_length=20, sa_column_kwargs={"server_default": "unknown"})
    assigned_at: datetime = Field(default_factory=utcnow)
    done_at: datetime | None = None


# How a labelled item was chosen: "imported" with the dataset, or an assignment's origin.
LABEL_ORIGINS = ("imported", "random", "uncertain", "manual", "unknown")


# -- reports and share links -------------------------------------------------------------------
REPORT_KINDS = ("run", "batch", "nli", "conseval", "dhp", "survey", "judges", "compare")


class ReportShareBase(SQLModel):
    kind: str = Field(max_length=20, index=True)  # one of REPORT_KINDS
    ref_id: int = 0  # the run, batch or study the report is built from
    title: str = Field(default="", max_length=200)


class ReportShare(ReportShareBase, table=True):
    """A read-only link to one report: whoever holds the token may view it, until it is revoked."""

    __tablename__ = "report_share"

    id: int | None = Field(default=None, primary_key=True)
    token: str = Field(default_factory=new_token, max_length=64, unique=True, index=True)
    created_at: datetime = Field(default_factory=utcnow)
    revoked_at: datetime | None = None


class ReportShareCreate(ReportShareBase):
    pass


class ReportSharePublic(ReportShareBase):
    id: int
    token: str
    created_at: datetime
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


# -- ConsEval ------------------------------------------------------------------------------------
class ConsevalStudyBase(SQLModel):
    name: str = Field(default="", max_length=200)
    # criteria, definitions, granularities, scales, models (no keys), samples n, methods, k, oracle, seed
    config: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class ConsevalStudy(ConsevalStudyBase, table=True):
    """A ConsEval study: models rating items on several scales and definitions, run by the worker."""

    __tablename__ = "conseval_study"

    id: int | None = Field(default=None, primary_key=True)
    status: str = Field(default="queued", max_length=20)  # queued | running | done | failed | cancelled
    cancel_requested: bool = False
    n_planned: int = 0
    n_done: int = 0
    calls: int = 0
    cache_hits: int = 0
    # None on studies run before these were counted (an added SQL NULL stays NULL): "not counted", not 0
    answered: int | None = 0
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    results: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    created_at: datetime = Field(default_factory=utcnow, index=True)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    heartbeat_at: datetime | None = None  # written while a worker runs the study; stale = the worker died


class ConsevalStudyPublic(ConsevalStudyBase):
    id: int
    status: str
    cancel_requested: bool
    n_planned: int
    n_done: int
    calls: int
    cache_hits: int
    answered: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None
    results: dict[str, Any] | None = None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class ConsevalItem(SQLModel, table=True):
    """A query and response rated in a study under one criterion, with an optional oracle or human score."""

    __tablename__ = "conseval_item"

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="conseval_study.id", index=True, ondelete="CASCADE")
    idx: int = 0
    criterion: str = Field(max_length=100)
    query: str = Field(sa_column=Column(Text, nullable=False))
    response: str = Field(sa_column=Column(Text, nullable=False))
    source_id: str = Field(default="", max_length=200)
    oracle_score: float | None = None
    oracle_scale: str | None = Field(default=None, max_length=20)


class ConsevalRating(SQLModel, table=True):
    """One model answer: a rater (model or oracle) scoring an item on a scale; value None = missing, raw kept."""

    __tablename__ = "conseval_rating"
    __table_args__ = (
        UniqueConstraint(
            "item_id", "rater", "method", "granularity", "scale", "sample", name="uq_conseval_rating_call"
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="conseval_study.id", index=True, ondelete="CASCADE")
    item_id: int = Field(foreign_key="conseval_item.id", index=True, ondelete="CASCADE")
    rater: str = Field(max_length=300)  # the model's label in the study, or "oracle"
    method: str = Field(max_length=20)  # base | dicl_r | dicl_sm | oracle
    granularity: str = Field(max_length=10)  # none | short | long
    scale: str = Field(max_length=20)
    sample: int = -1  # -1: greedy (temperature 0); 0..n-1: sampled at temperature 1.0
    value: float | None = None
    raw: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    problem: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


class ConsevalRater(SQLModel, table=True):
    """A person rating a study's items through a personal link; a revoked link no longer opens the page."""

    __tablename__ = "conseval_rater"

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="conseval_study.id", index=True, ondelete="CASCADE")
    name: str = Field(max_length=100)
    token: str = Field(default_factory=new_token, max_length=64, unique=True, index=True)
    revoked_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)


class ConsevalHumanRating(SQLModel, table=True):
    """A person's score of an item on one of the study's scales."""

    __tablename__ = "conseval_human_rating"
    __table_args__ = (UniqueConstraint("rater_id", "item_id", "scale", name="uq_conseval_human_rating"),)

    id: int | None = Field(default=None, primary_key=True)
    rater_id: int = Field(foreign_key="conseval_rater.id", index=True, ondelete="CASCADE")
    item_id: int = Field(foreign_key="conseval_item.id", index=True, ondelete="CASCADE")
    scale: str = Field(max_length=20)
    value: float
    updated_at: datetime = Field(default_factory=utcnow)


# -- DHP: discernment of LLM evaluators, and the expert-weight survey --------------------------------
class DhpTask(SQLModel, table=True):
    """A task added by a user, with its metrics and perturbations; the built-in ones live in services.dhp.catalogue."""

    __tablename__ = "dhp_task"

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(max_length=40, unique=True, index=True)
    name: str = Field(max_length=200)
    text_label: str = Field(default="Text", max_length=60)
    source_label: str | None = Field(default=None, max_length=60)
    definition: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    metrics: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    perturbations: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class DhpSetBase(SQLModel):
    name: str = Field(max_length=200)
    task: str = Field(max_length=40, index=True)
    seed: int = 0


class DhpSet(DhpSetBase, table=True):
    """Good texts of a task and their perturbed versions (rows of dhp_text)."""

    __tablename__ = "dhp_set"

    id: int | None = Field(default=None, primary_key=True)
    items: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    status: str = Field(default="ready", max_length=20)  # generating | ready | failed
    model: str = Field(default="", max_length=200)  # who made the LLM-based perturbations
    params: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))  # that backend
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(default_factory=utcnow)


class DhpSetPublic(DhpSetBase):
    id: int
    items: list[dict[str, Any]]
    status: str
    model: str
    error: str | None
    created_at: datetime


class DhpText(SQLModel, table=True):
    """One text of a set: an original ("original") or its version under one perturbation."""

    __tablename__ = "dhp_text"
    __table_args__ = (UniqueConstraint("set_id", "item_id", "perturbation", name="uq_dhp_text"),)

    id: int | None = Field(default=None, primary_key=True)
    set_id: int = Field(foreign_key="dhp_set.id", index=True, ondelete="CASCADE")
    item_id: str = Field(max_length=100)
    perturbation: str = Field(max_length=60)
    level: str = Field(default="", max_length=20)
    text: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    detail: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(default_factory=utcnow)


class DhpRunBase(SQLModel):
    set_id: int = Field(foreign_key="dhp_set.id", index=True, ondelete="CASCADE")
    backend_kind: str = Field(default="embedded", max_length=20)
    model: str = Field(default="", max_length=200)
    base_url: str | None = Field(default=None, max_length=500)
    repeats: int = 5
    seed: int = 0
    params: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    prompt_versions: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class DhpRun(DhpRunBase, table=True):
    """One evaluator model scoring every text of a set, r times per metric, in the worker."""

    __tablename__ = "dhp_run"

    id: int | None = Field(default=None, primary_key=True)
    status: str = Field(default="queued", max_length=20)  # queued | running | done | failed | cancelled
    cancel_requested: bool = False
    n_total: int = 0
    n_done: int = 0
    n_failed: int = 0
    # Model usage; None on runs made before it was counted (an added SQL NULL stays NULL): "not counted"
    calls: int | None = 0
    answered: int | None = 0
    cache_hits: int | None = 0
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    worker: str | None = Field(default=None, max_length=100)
    heartbeat_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None


class DhpRunPublic(DhpRunBase):
    id: int
    status: str
    n_total: int
    n_done: int
    n_failed: int
    calls: int | None = None
    answered: int | None = None
    cache_hits: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None
    created_at: datetime
    finished_at: datetime | None


class DhpScore(SQLModel, table=True):
    """The r scores of one text on one metric by a run's model, and their mean."""

    __tablename__ = "dhp_score"
    __table_args__ = (UniqueConstraint("run_id", "text_id", "metric", name="uq_dhp_score"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="dhp_run.id", index=True, ondelete="CASCADE")
    text_id: int = Field(foreign_key="dhp_text.id", index=True, ondelete="CASCADE")
    metric: str = Field(max_length=100)
    scores: list[float] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    mean: float | None = None
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(default_factory=utcnow)


class SurveyBase(SQLModel):
    title: str = Field(max_length=200)
    task: str = Field(max_length=40, index=True)


class Survey(SurveyBase, table=True):
    """An expert-weight survey of a task: which metric each quality issue impacts most (DHP Figure 5)."""

    __tablename__ = "dhp_survey"

    id: int | None = Field(default=None, primary_key=True)
    status: str = Field(default="open", max_length=20)  # open | closed
    task_definition: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    metrics: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    questions: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)
    closed_at: datetime | None = None


class SurveyPublic(SurveyBase):
    id: int
    status: str
    task_definition: str
    metrics: list[dict[str, Any]]
    questions: list[dict[str, Any]]
    created_at: datetime
    closed_at: datetime | None


class SurveyExpert(SQLModel, table=True):
    """An expert invited to a survey; the token in their personal link identifies them until revoked."""

    __tablename__ = "dhp_survey_expert"
    __table_args__ = (UniqueConstraint("survey_id", "name", name="uq_dhp_survey_expert_name"),)

    id: int | None = Field(default=None, primary_key=True)
    survey_id: int = Field(foreign_key="dhp_survey.id", index=True, ondelete="CASCADE")
    name: str = Field(max_length=100)
    token: str = Field(default_factory=new_token, max_length=64, unique=True, index=True)
    revoked_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)


class SurveyExpertPublic(SQLModel):
    id: int
    survey_id: int
    name: str
    revoked_at: datetime | None
    created_at: datetime


class SurveyVote(SQLModel, table=True):
    """An expert's answer to one question of a survey: the metric the quality issue impacts most."""

    __tablename__ = "dhp_survey_vote"
    __table_args__ = (UniqueConstraint("expert_id", "question", name="uq_dhp_survey_vote"),)

    id: int | None = Field(default=None, primary_key=True)
    survey_id: int = Field(foreign_key="dhp_survey.id", index=True, ondelete="CASCADE")
    expert_id: int = Field(foreign_key="dhp_survey_expert.id", index=True, ondelete="CASCADE")
    question: str = Field(max_length=60)
    metric: str = Field(max_length=100)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


# -- factual inconsistency paradigms (Summ-NLI, Sent-NLI, QG-QA beside DCE) --------------------------
class MethodResultBase(SQLModel):
    method: str = Field(max_length=20)  # dce-amc | paragraph | evidence | summ-nli | sent-nli | qg-qa
    window: int | None = None  # Sent-NLI / QG-QA window w
    label: str | None = Field(default=None, max_length=20)  # consistent | inconsistent | None: no unit read
    score: float | None = None  # share of windows / pairs judged consistent (Ẑ for DCE)
    n_units: int = 0
    n_failed: int = 0  # windows or pairs whose reply could not be read
    compare_group: str | None = Field(default=None, max_length=40, index=True)  # runs compared on one document
    # the method's windows, QA pairs or whole-summary judgement, with the document sentences used
    detail: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class MethodResult(MethodResultBase, table=True):
    """A run's verdict by one method, and what the method saw and said (services.nli.paradigms.result_record)."""

    __tablename__ = "method_result"

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="run.id", index=True, unique=True, ondelete="CASCADE")
    created_at: datetime = Field(default_factory=utcnow)


class MethodResultPublic(MethodResultBase):
    id: int
    run_id: int
    created_at: datetime


class BatchOptions(SQLModel, table=True):
    """A batch's method options: the window, and the sample index of a repeated run (Table 4)."""

    __tablename__ = "batch_options"

    batch_id: int = Field(primary_key=True, foreign_key="batch.id", ondelete="CASCADE")
    window: int = 1
    sample: int = 0  # the cache's sample index: repeats of one configuration ask the model again
    repeat_group: str | None = Field(default=None, max_length=40, index=True)


# -- judge comparisons -----------------------------------------------------------------------------
class JudgePanelBase(SQLModel):
    """Judges (finished batches over one dataset) compared side by side, with the card options."""

    name: str = Field(default="", max_length=200)
    dataset_id: int = Field(foreign_key="dataset.id", index=True, ondelete="CASCADE")
    batch_ids: list[int | str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))  # or columns
    options: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class JudgePanel(JudgePanelBase, table=True):
    """A saved comparison: what a judges report and its share link are built from."""

    __tablename__ = "judge_panel"

    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utcnow)


class JudgePanelPublic(JudgePanelBase):
    id: int
    created_at: datetime


# -- the owner: sign-in sessions, failed sign-ins, the chosen backend --------------------------------
class OwnerSession(SQLModel, table=True):
    """A signed-in owner's browser: the cookie's token (stored hashed), until it expires or is signed out."""

    __tablename__ = "owner_session"

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True, index=True)  # sha256 of the cookie's token
    owner: str = Field(max_length=320)  # "password" for the studio password
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime = Field(index=True)
    revoked_at: datetime | None = None


class SignInFailure(SQLModel, table=True):
    """One wrong password, by the (hashed) address it came from: the sign-in back-off counts these."""

    __tablename__ = "sign_in_failure"

    id: int | None = Field(default=None, primary_key=True)
    client: str = Field(max_length=64, index=True)  # sha256 of the client address
    at: datetime = Field(default_factory=utcnow, index=True)


class OwnerBackend(SQLModel, table=True):
    """The backend an owner chose on Settings, restored in each new browser session. Never a key: only
    whether one was typed (which must then be typed again)."""

    __tablename__ = "owner_backend"

    owner: str = Field(primary_key=True, max_length=320)
    config: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    typed_key: bool = False
    updated_at: datetime = Field(default_factory=utcnow)


# Credentials in a model's base URL never reach the database, whichever code path writes the row.
@event.listens_for(Run, "before_insert")
@event.listens_for(Run, "before_update")
@event.listens_for(Batch, "before_insert")
@event.listens_for(Batch, "before_update")
@event.listens_for(DhpRun, "before_insert")
@event.listens_for(DhpRun, "before_update")
@event.listens_for(OwnerBackend, "before_insert")
@event.listens_for(OwnerBackend, "before_update")
def _no_credentials_in_base_url(_mapper, _connection, target) -> None:
    if isinstance(target, OwnerBackend):
        if target.config.get("base_url"):
            target.config = {**target.config, "base_url": redact_url(target.config["base_url"])}
        return
    target.base_url = redact_url(target.base_url)
