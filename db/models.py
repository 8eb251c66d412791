"""Every table of the app (SQLModel), with Base / table / Public variants where pages read them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, Text
from sqlmodel import Field, SQLModel


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
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(default_factory=utcnow)
