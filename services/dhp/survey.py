"""The expert-weight survey of DHP (Figure 5): which metric does each quality issue impact most?

A survey belongs to a task and holds a snapshot of its definition, its metrics and one question per quality
issue (one per perturbation kind; minor and major share the issue). Experts are invited by a personal link
with an unguessable token, which the organiser can revoke: a revoked expert's votes stay on record but stop
counting in the weights and the agreement (restoring the link counts them again). Each expert has one vote
per question, stored as an upsert on (expert, question), so a changed answer replaces the old one and two
experts voting at the same moment both keep theirs. The weights of a question are the vote shares (votes 4,
1, 5 give 0.4, 0.1, 0.5); agreement among experts is Krippendorff's alpha (nominal). A closed survey takes
no more votes and its weights feed D_EW.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pandas as pd
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from db.engine import dialect_insert
from db.models import (
    Survey,
    SurveyExpert,
    SurveyExpertPublic,
    SurveyPublic,
    SurveyVote,
    new_token,
    utcnow,
)
from services.dhp.perturb import KINDS, TaskSpec
from services.errors import SurveyError
from services.stats import AlphaResult, alpha_from_long

log = logging.getLogger(__name__)

MAX_NAME = 100


def create_survey(task: TaskSpec, *, title: str, session: Session) -> int:
    """A survey of the task's quality issues over its metrics (a snapshot: later task edits do not change it)."""
    if len(task.metrics) < 1:
        raise SurveyError("The task has no metrics to vote for.")
    row = Survey(
        title=title.strip() or f"{task.name}: which metric does each quality issue impact most?",
        task=task.key,
        task_definition=task.definition,
        metrics=[{"name": m.name, "definition": m.definition} for m in task.metrics],
        questions=[{"key": k, "name": KINDS[k].name, "issue": KINDS[k].issue} for k in task.kinds()],
    )
    session.add(row)
    session.flush()
    return int(row.id)  # type: ignore[arg-type]


def get_survey(survey_id: int, *, session: Session) -> SurveyPublic | None:
    row = session.get(Survey, survey_id)
    return SurveyPublic.model_validate(row) if row else None


def list_surveys(*, session: Session, task: str | None = None) -> list[SurveyPublic]:
    q = select(Survey).order_by(Survey.id.desc())  # type: ignore[union-attr]
    if task:
        q = q.where(Survey.task == task)
    return [SurveyPublic.model_validate(r) for r in session.execute(q).scalars().all()]


def invite(survey_id: int, name: str, *, session: Session) -> SurveyExpertPublic:
    """Invite an expert by name; their personal token is read with `expert_token`."""
    name = " ".join((name or "").split())
    if not name:
        raise SurveyError("Give the expert a name.")
    if len(name) > MAX_NAME:
        raise SurveyError(f"The name is longer than {MAX_NAME} characters.")
    sv = session.get(Survey, survey_id)
    if sv is None:
        raise SurveyError(f"Survey {survey_id} does not exist.")
    if sv.status != "open":
        raise SurveyError("The survey is closed; reopen it to invite more experts.")
    exists = session.execute(
        select(SurveyExpert.id).where(SurveyExpert.survey_id == survey_id, SurveyExpert.name == name)
    ).first()
    if exists:
        raise SurveyError(f"'{name}' is invited already.")
    row = SurveyExpert(survey_id=survey_id, name=name)
    session.add(row)
    try:
        session.flush()
    except IntegrityError:
        raise SurveyError(f"'{name}' is invited already.") from None
    return SurveyExpertPublic.model_validate(row)


def experts(survey_id: int, *, session: Session) -> list[SurveyExpertPublic]:
    rows = session.execute(
        select(SurveyExpert).where(SurveyExpert.survey_id == survey_id).order_by(SurveyExpert.id)  # type: ignore[arg-type]
    ).scalars()
    return [SurveyExpertPublic.model_validate(r) for r in rows]


def expert_token(expert_id: int, *, session: Session) -> str | None:
    return session.execute(select(SurveyExpert.token).where(SurveyExpert.id == expert_id)).scalar()


def revoke(expert_id: int, *, session: Session) -> str | None:
    """Revoke an expert's link: it stops working at once and a new token replaces it (their votes stay)."""
    row = session.get(SurveyExpert, expert_id)
    if row is None:
        return None
    row.revoked_at = utcnow()
    row.token = new_token()  # the old link can never identify anyone again
    session.add(row)
    return row.token


def restore(expert_id: int, *, session: Session) -> str | None:
    """Give a revoked expert a working link again (a fresh token)."""
    row = session.get(SurveyExpert, expert_id)
    if row is None:
        return None
    row.revoked_at = None
    row.token = new_token()
    session.add(row)
    return row.token


@dataclass(frozen=True)
class ExpertAccess:
    """What a personal link opens: the expert and their survey, or why it opens nothing."""

    expert: SurveyExpertPublic | None
    survey: SurveyPublic | None
    problem: str | None = None


def by_token(token: str, *, session: Session) -> ExpertAccess:
    """The expert a token identifies (revoked links identify no one)."""
    token = (token or "").strip()
    row = session.execute(select(SurveyExpert).where(SurveyExpert.token == token)).scalars().first() if token else None
    if row is None:
        return ExpertAccess(None, None, "This survey link is not valid: it may have been revoked. Ask the organiser.")
    sv = session.get(Survey, row.survey_id)
    if row.revoked_at is not None:
        return ExpertAccess(None, None, "This survey link has been revoked. Ask the organiser for a new one.")
    return ExpertAccess(SurveyExpertPublic.model_validate(row), SurveyPublic.model_validate(sv))


def vote(expert_id: int, question: str, metric: str, *, session: Session) -> None:
    """Store (or change) the expert's answer to one question; SurveyError when the survey is closed or the
    link revoked, or the question or metric is not the survey's.

    The upsert comes first in the transaction, so on SQLite it takes the write lock before any read: a
    concurrent voter waits (busy_timeout) instead of failing on a stale snapshot, and closing the survey
    cannot slip between the checks and the write. A failed check raises, and the caller's session rolls back.
    """
    now = utcnow()
    # The survey id comes from a subquery inside the upsert: a read before it would start a read
    # transaction on SQLite, which cannot then become a write if another voter committed meanwhile.
    survey_of = select(SurveyExpert.survey_id).where(SurveyExpert.id == expert_id).scalar_subquery()
    ins = dialect_insert(session.connection())(SurveyVote.__table__).values(
        survey_id=survey_of, expert_id=expert_id, question=question, metric=metric, created_at=now, updated_at=now
    )
    try:
        session.execute(
            ins.on_conflict_do_update(
                index_elements=["expert_id", "question"],
                set_={"metric": ins.excluded.metric, "updated_at": ins.excluded.updated_at},
            )
        )
    except IntegrityError:  # no such expert: the subquery gave NULL
        raise SurveyError("Unknown expert.") from None
    sid = session.execute(select(SurveyExpert.survey_id).where(SurveyExpert.id == expert_id)).scalar()
    ex = session.get(SurveyExpert, expert_id, populate_existing=True)
    sv = session.get(Survey, sid, populate_existing=True)
    if ex is None or sv is None:
        raise SurveyError("Unknown expert.")
    if ex.revoked_at is not None:
        raise SurveyError("This survey link has been revoked.")
    if sv.status != "open":
        raise SurveyError("The survey is closed: answers can no longer change.")
    if question not in {q["key"] for q in sv.questions}:
        raise SurveyError(f"The survey has no question {question!r}.")
    if metric not in {m["name"] for m in sv.metrics}:
        raise SurveyError(f"{metric!r} is not one of the survey's metrics.")


def my_votes(expert_id: int, *, session: Session) -> dict[str, str]:
    """question -> metric of one expert."""
    rows = session.execute(
        select(SurveyVote.question, SurveyVote.metric).where(SurveyVote.expert_id == expert_id)
    ).all()
    return {q: m for q, m in rows}


def votes_frame(survey_id: int, *, session: Session, counted_only: bool = False) -> pd.DataFrame:
    """Every vote: expert, question, metric, updated_at, revoked; `counted_only` leaves out revoked experts'."""
    q = (
        select(SurveyExpert.name, SurveyVote.question, SurveyVote.metric, SurveyVote.updated_at,
               SurveyExpert.revoked_at.is_not(None))  # type: ignore[union-attr]
        .join(SurveyExpert, SurveyExpert.id == SurveyVote.expert_id)  # type: ignore[arg-type]
        .where(SurveyVote.survey_id == survey_id)
        .order_by(SurveyExpert.name, SurveyVote.question)
    )  # fmt: skip
    if counted_only:
        q = q.where(SurveyExpert.revoked_at.is_(None))  # type: ignore[union-attr]
    rows = session.execute(q).all()
    return pd.DataFrame(rows, columns=["expert", "question", "metric", "updated_at", "revoked"])


def answers_matrix(survey_id: int, *, session: Session) -> pd.DataFrame:
    """Who answered what: one row per expert, one column per question (empty when not answered)."""
    sv = session.get(Survey, survey_id)
    if sv is None:
        return pd.DataFrame()
    names = [e.name for e in experts(survey_id, session=session)]
    cols = [q["key"] for q in sv.questions]
    df = pd.DataFrame("", index=names, columns=cols)
    for r in votes_frame(survey_id, session=session).itertuples():
        df.loc[r.expert, r.question] = r.metric
    df.insert(0, "answered", [f"{(df.loc[n, cols] != '').sum()}/{len(cols)}" for n in names])
    df.index.name = "expert"
    return df


@dataclass(frozen=True)
class SurveyWeights:
    """Vote counts and shares per question (the expert weights of each perturbation kind)."""

    counts: dict[str, dict[str, int]]
    weights: dict[str, dict[str, float]]  # questions with no vote are left out
    n_experts_voted: int


def weights(survey_id: int, *, session: Session) -> SurveyWeights:
    """Vote shares: votes 4, 1, 5 for three metrics give 0.4, 0.1, 0.5 (revoked experts' votes do not count)."""
    sv = session.get(Survey, survey_id)
    if sv is None:
        raise SurveyError(f"Survey {survey_id} does not exist.")
    metrics = [m["name"] for m in sv.metrics]
    counts = {q["key"]: dict.fromkeys(metrics, 0) for q in sv.questions}
    df = votes_frame(survey_id, session=session, counted_only=True)
    for r in df.itertuples():
        if r.question in counts and r.metric in counts[r.question]:
            counts[r.question][r.metric] += 1
    shares = {q: {m: n / sum(c.values()) for m, n in c.items()} for q, c in counts.items() if sum(c.values()) > 0}
    return SurveyWeights(counts, shares, int(df["expert"].nunique()) if not df.empty else 0)


def weights_frame(w: SurveyWeights, survey: SurveyPublic) -> pd.DataFrame:
    """Long rows question, issue, metric, votes, weight (for the Figure 6 chart)."""
    names = {q["key"]: q["name"] for q in survey.questions}
    rows = [
        {"question": q, "issue": names.get(q, q), "metric": m, "votes": n, "weight": w.weights.get(q, {}).get(m)}
        for q, c in w.counts.items()
        for m, n in c.items()
    ]
    return pd.DataFrame(rows, columns=["question", "issue", "metric", "votes", "weight"])


def agreement(survey_id: int, *, session: Session, n_boot: int = 1000, seed: int = 0) -> AlphaResult:
    """Krippendorff's alpha (nominal) among the counted experts: questions are the units, the metric the value."""
    df = votes_frame(survey_id, session=session, counted_only=True)[["expert", "question", "metric"]]
    if df.empty:
        return AlphaResult(None, "nominal", 0, 0, 0, note="No votes yet.")
    return alpha_from_long(
        df.rename(columns={"question": "unit", "expert": "rater", "metric": "value"}),
        "nominal",
        n_boot=n_boot,
        seed=seed,
    )


def close(survey_id: int, *, session: Session) -> None:
    """Close a survey: answers are final and its weights can feed D_EW."""
    session.execute(
        update(Survey).where(Survey.id == survey_id).values(status="closed", closed_at=utcnow())  # type: ignore[arg-type]
    )


def reopen(survey_id: int, *, session: Session) -> None:
    session.execute(update(Survey).where(Survey.id == survey_id).values(status="open", closed_at=None))  # type: ignore[arg-type]


def closed_weights(task: str, *, session: Session) -> tuple[SurveyPublic, SurveyWeights] | None:
    """The newest closed survey of a task with its weights (what D_EW uses), or None."""
    for sv in list_surveys(session=session, task=task):
        if sv.status == "closed":
            return sv, weights(sv.id, session=session)
    return None
