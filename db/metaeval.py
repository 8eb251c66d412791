"""Queries of the meta-evaluation: a batch's items with their human judgments, its round results, baseline values."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import bindparam, column, func, insert, text
from sqlmodel import Session, col, select

from db.models import BaselineScore, Batch, BatchItem, BatchPublic, Dataset, DatasetItem, DatasetPublic, Document

# An item row, in dataset order: item_id, external_id, status, score, final_score, human_score, human_label,
# n_rounds, n_sentences, n_unknown (and, from item_result_rows, the result and the sentence labels).
ITEM_COLUMNS = (
    BatchItem.item_id,
    DatasetItem.external_id,
    BatchItem.status,
    BatchItem.score,
    BatchItem.final_score,
    DatasetItem.human_score,
    DatasetItem.human_label,
    BatchItem.n_rounds,
    BatchItem.n_sentences,
    BatchItem.n_unknown,
)

JsonQuery = Literal["flags", "rounds", "sentences", "verdicts", "votes", "workers"]

# SQLite parses the JSON in C: about four times faster than json.loads of whole results in Python. A sentence's
# position in the round is its index (services.dcr.evaluate numbers them so). A result written with its columns
# (services/result_columns.py: `verdicts` not NULL) is not parsed at all: its round-0 flag and sentence verdicts
# are read from them.
_SQLITE_JSON: dict[str, str] = {
    # item_id, round 0's model_is_consistent, entries in the item's sentence labels
    "flags": """
SELECT bi.item_id,
       CASE WHEN bi.verdicts IS NULL THEN json_extract(bi.result, '$.rounds[0].model_is_consistent')
            WHEN bi.consistent >= 0 THEN bi.consistent END,
       json_array_length(di.sentence_labels)
FROM batch_item bi JOIN dataset_item di ON di.id = bi.item_id
WHERE bi.batch_id = :b
""",
    # item_id, round, score for the rounds between the first and the last
    "rounds": """
SELECT bi.item_id, CAST(r.key AS INTEGER), json_extract(r.value, '$.score')
FROM batch_item bi, json_each(bi.result, '$.rounds') r
WHERE bi.batch_id = :b AND bi.n_rounds >= 3 AND r.key BETWEEN 1 AND bi.n_rounds - 2
""",
    # item_id, sentence index, verdict at round 0 of done items
    "sentences": """
SELECT bi.item_id, CAST(s.key AS INTEGER), json_extract(s.value, '$.verdict')
FROM batch_item bi, json_each(bi.result, '$.rounds[0].sentences') s
WHERE bi.batch_id = :b AND bi.status = 'done' AND bi.verdicts IS NULL
""",
    # item_id, round 0's sentence verdicts as letters (services/result_columns.py) of done items that have them
    "verdicts": """
SELECT bi.item_id, bi.verdicts FROM batch_item bi
WHERE bi.batch_id = :b AND bi.status = 'done' AND bi.verdicts IS NOT NULL
""",
    # item_id, sentence index, yes votes, votes of every batch item
    "votes": """
SELECT bi.item_id, CAST(l.key AS INTEGER), SUM(v.value), COUNT(*)
FROM batch_item bi JOIN dataset_item di ON di.id = bi.item_id, json_each(di.sentence_labels) l, json_each(l.value) v
WHERE bi.batch_id = :b
GROUP BY bi.item_id, l.key
""",
    # distinct rater ids among the votes
    "workers": """
SELECT COUNT(DISTINCT v.key)
FROM batch_item bi JOIN dataset_item di ON di.id = bi.item_id, json_each(di.sentence_labels) l, json_each(l.value) v
WHERE bi.batch_id = :b
""",
}

# The same queries for PostgreSQL, whose JSON functions are also C: the results are not sent to Python whole. A
# value that is not an array or an object (JSON null) yields no rows, as in SQLite.
_POSTGRES_JSON: dict[str, str] = {
    "flags": """
SELECT bi.item_id,
       CASE WHEN bi.verdicts IS NULL THEN (bi.result -> 'rounds' -> 0 ->> 'model_is_consistent')::boolean
            WHEN bi.consistent >= 0 THEN bi.consistent = 1 END,
       CASE WHEN json_typeof(di.sentence_labels) = 'array' THEN json_array_length(di.sentence_labels) END
FROM batch_item bi JOIN dataset_item di ON di.id = bi.item_id
WHERE bi.batch_id = :b
""",
    "rounds": """
SELECT bi.item_id, (r.k - 1)::int, (r.value ->> 'score')::float
FROM batch_item bi,
     json_array_elements(CASE WHEN json_typeof(bi.result -> 'rounds') = 'array' THEN bi.result -> 'rounds' END)
       WITH ORDINALITY r(value, k)
WHERE bi.batch_id = :b AND bi.n_rounds >= 3 AND r.k - 1 BETWEEN 1 AND bi.n_rounds - 2
""",
    "sentences": """
SELECT bi.item_id, (s.k - 1)::int, s.value ->> 'verdict'
FROM batch_item bi,
     json_array_elements(CASE WHEN json_typeof(bi.result -> 'rounds' -> 0 -> 'sentences') = 'array'
                         THEN bi.result -> 'rounds' -> 0 -> 'sentences' END) WITH ORDINALITY s(value, k)
WHERE bi.batch_id = :b AND bi.status = 'done' AND bi.verdicts IS NULL
ORDER BY bi.item_id, s.k
""",
    "verdicts": """
SELECT bi.item_id, bi.verdicts FROM batch_item bi
WHERE bi.batch_id = :b AND bi.status = 'done' AND bi.verdicts IS NOT NULL
""",
    "votes": """
SELECT bi.item_id, (l.k - 1)::int,
       SUM(CASE v.value WHEN 'true' THEN 1 WHEN 'false' THEN 0 ELSE v.value::numeric END)::int, COUNT(*)::int
FROM batch_item bi JOIN dataset_item di ON di.id = bi.item_id,
     json_array_elements(CASE WHEN json_typeof(di.sentence_labels) = 'array' THEN di.sentence_labels END)
       WITH ORDINALITY l(value, k),
     json_each_text(CASE WHEN json_typeof(l.value) = 'object' THEN l.value END) v
WHERE bi.batch_id = :b
GROUP BY bi.item_id, l.k
ORDER BY bi.item_id, l.k
""",
    "workers": """
SELECT COUNT(DISTINCT v.key)
FROM batch_item bi JOIN dataset_item di ON di.id = bi.item_id,
     json_array_elements(CASE WHEN json_typeof(di.sentence_labels) = 'array' THEN di.sentence_labels END) l,
     json_each_text(CASE WHEN json_typeof(l) = 'object' THEN l END) v
WHERE bi.batch_id = :b
""",
}

# What changed in a running batch since a time (services.metaeval.loading.RunningBatches): in one statement, so
# from one snapshot, the count and newest update of its finished items, and each item updated since then, finished
# or not (a re-run item goes back to pending with a new updated_at), with its round-0 model_is_consistent.
# Listing every status lets the (batch_id, status, updated_at) index serve the range on updated_at.
_CHANGES: dict[str, str] = {
    "sqlite": """
SELECT c.n, c.w, d.item_id, d.status, d.score, d.final_score, d.n_rounds, d.n_sentences, d.n_unknown, d.flag
FROM (SELECT COUNT(*) AS n, MAX(updated_at) AS w FROM batch_item
      WHERE batch_id = :b AND status IN ('done', 'failed')) AS c
LEFT JOIN (SELECT item_id, status, score, final_score, n_rounds, n_sentences, n_unknown,
                  json_extract(result, '$.rounds[0].model_is_consistent') AS flag
           FROM batch_item
           WHERE batch_id = :b AND status IN ('pending', 'running', 'done', 'failed') AND updated_at >= :since) AS d
ON 1 = 1
""",
    "postgresql": """
SELECT c.n, c.w, d.item_id, d.status, d.score, d.final_score, d.n_rounds, d.n_sentences, d.n_unknown, d.flag
FROM (SELECT COUNT(*) AS n, MAX(updated_at) AS w FROM batch_item
      WHERE batch_id = :b AND status IN ('done', 'failed')) AS c
LEFT JOIN (SELECT item_id, status, score, final_score, n_rounds, n_sentences, n_unknown,
                  (result -> 'rounds' -> 0 ->> 'model_is_consistent')::boolean AS flag
           FROM batch_item
           WHERE batch_id = :b AND status IN ('pending', 'running', 'done', 'failed') AND updated_at >= :since) AS d
ON true
""",
}
# The rounds between the first and the last of the items updated since a time (as the "rounds" query above).
_ROUNDS_SINCE: dict[str, str] = {
    "sqlite": """
SELECT bi.item_id, CAST(r.key AS INTEGER), json_extract(r.value, '$.score')
FROM batch_item bi, json_each(bi.result, '$.rounds') r
WHERE bi.batch_id = :b AND bi.status IN ('pending', 'running', 'done', 'failed') AND bi.updated_at >= :since
  AND bi.n_rounds >= 3 AND r.key BETWEEN 1 AND bi.n_rounds - 2
""",
    "postgresql": """
SELECT bi.item_id, (r.k - 1)::int, (r.value ->> 'score')::float
FROM batch_item bi,
     json_array_elements(CASE WHEN json_typeof(bi.result -> 'rounds') = 'array' THEN bi.result -> 'rounds' END)
       WITH ORDINALITY r(value, k)
WHERE bi.batch_id = :b AND bi.status IN ('pending', 'running', 'done', 'failed') AND bi.updated_at >= :since
  AND bi.n_rounds >= 3 AND r.k - 1 BETWEEN 1 AND bi.n_rounds - 2
""",
}


def changes_since(
    *, session: Session, batch_id: int, since: datetime
) -> tuple[int, datetime | None, list[tuple[Any, ...]], list[tuple[int, int, float | None]]]:
    """The batch's finished items (how many, the newest updated_at) and the items updated at or after `since`:
    (item_id, status, score, final_score, n_rounds, n_sentences, n_unknown, round-0 model_is_consistent), with
    the (item_id, round, score) of their rounds between the first and the last. The count and the items come
    from one statement; the rounds from a second (an item it lists that the first did not is for the caller to
    leave out)."""
    dialect = session.get_bind().dialect.name
    when = BatchItem.__table__.c.updated_at.type
    q = text(_CHANGES[dialect]).bindparams(bindparam("since", type_=when)).columns(column("n"), column("w", when))
    rows = session.execute(q, {"b": batch_id, "since": since}).all()
    n, newest = int(rows[0][0] or 0), rows[0][1]
    changed = [tuple(r[2:]) for r in rows if r[2] is not None]
    rq = text(_ROUNDS_SINCE[dialect]).bindparams(bindparam("since", type_=when))
    rounds = [tuple(r) for r in session.execute(rq, {"b": batch_id, "since": since})]
    return n, newest, changed, rounds  # type: ignore[return-value]


# The round-0 sentence verdicts of some of a batch's done items (as the "sentences" query), and a row with a NULL
# index for a done item without any: which of the items were done is in the answer too.
_SENTENCES_OF: dict[str, str] = {
    "sqlite": """
SELECT bi.item_id, CAST(s.key AS INTEGER), json_extract(s.value, '$.verdict')
FROM batch_item bi LEFT JOIN json_each(bi.result, '$.rounds[0].sentences') s
WHERE bi.batch_id = :b AND bi.status = 'done' AND bi.item_id IN :ids
""",
    "postgresql": """
SELECT bi.item_id, (s.k - 1)::int, s.value ->> 'verdict'
FROM batch_item bi
LEFT JOIN LATERAL json_array_elements(
    CASE WHEN json_typeof(bi.result -> 'rounds' -> 0 -> 'sentences') = 'array'
    THEN bi.result -> 'rounds' -> 0 -> 'sentences' END) WITH ORDINALITY s(value, k) ON true
WHERE bi.batch_id = :b AND bi.status = 'done' AND bi.item_id IN :ids
""",
}


def sentences_of(*, session: Session, batch_id: int, item_ids: Sequence[int]) -> list[tuple[int, int | None, Any]]:
    """(item_id, sentence index, verdict) at round 0 of those of these items that are done; (item_id, None,
    None) for a done item without sentences. Read _CHUNK ids at a time."""
    q = text(_SENTENCES_OF[session.get_bind().dialect.name]).bindparams(bindparam("ids", expanding=True))
    rows: list[tuple[int, int | None, Any]] = []
    ids = list(item_ids)
    for i in range(0, len(ids), _CHUNK):
        rows.extend(tuple(r) for r in session.execute(q, {"b": batch_id, "ids": ids[i : i + _CHUNK]}))
    return rows


def finished_summary(*, session: Session, batch_id: int) -> tuple[int, datetime | None]:
    """How many of the batch's items are finished and the newest updated_at among them."""
    n, newest = session.execute(
        select(func.count(), func.max(BatchItem.updated_at)).where(
            BatchItem.batch_id == batch_id, col(BatchItem.status).in_(("done", "failed"))
        )
    ).one()
    return int(n), newest


def running_item_ids(*, session: Session, batch_id: int) -> list[int]:
    """The item ids of the batch's running items."""
    q = select(BatchItem.item_id).where(BatchItem.batch_id == batch_id, BatchItem.status == "running")
    return [int(i) for i in session.connection().execute(q).scalars()]


# Stored baseline values are read this many item ids at a time (the bound parameters of one IN list).
_CHUNK = 5000


def batch_stamp(*, session: Session, batch_id: int) -> str:
    """Changes whenever the batch's results change (status, items finished, last write); "missing" for no batch."""
    status = session.exec(select(Batch.status, Batch.finished_at).where(Batch.id == batch_id)).first()
    if status is None:
        return "missing"
    n, last = session.exec(
        select(func.count(), func.max(BatchItem.updated_at)).where(
            BatchItem.batch_id == batch_id, col(BatchItem.status).in_(("done", "failed"))
        )
    ).one()
    return f"{status[0]}|{status[1]}|{n}|{last}"


def batch_with_dataset(*, session: Session, batch_id: int) -> tuple[BatchPublic, DatasetPublic | None] | None:
    """A batch and its dataset (None when the dataset is gone); None for an unknown batch."""
    b = session.get(Batch, batch_id)
    if b is None:
        return None
    return BatchPublic.model_validate(b), dataset_public(session=session, dataset_id=b.dataset_id)


def dataset_public(*, session: Session, dataset_id: int) -> DatasetPublic | None:
    ds = session.get(Dataset, dataset_id)
    return DatasetPublic.model_validate(ds) if ds else None


def batches_by_id(*, session: Session, batch_ids: Iterable[int]) -> dict[int, BatchPublic]:
    """The batches among these ids that exist."""
    rows = session.exec(select(Batch).where(col(Batch.id).in_(list(batch_ids))))
    return {b.id: BatchPublic.model_validate(b) for b in rows}  # type: ignore[misc]


def item_rows(*, session: Session, batch_id: int) -> list[tuple[Any, ...]]:
    """The batch's items as ITEM_COLUMNS rows, in dataset order (plain tuples through Core: the ORM's row
    layer costs more than the query at 50,000 items)."""
    q = (
        select(*ITEM_COLUMNS)
        .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
        .where(BatchItem.batch_id == batch_id)
        .order_by(DatasetItem.idx)
    )
    return [tuple(r) for r in session.connection().execute(q)]


def item_result_rows(*, session: Session, batch_id: int) -> list[tuple[Any, ...]]:
    """item_rows followed by each item's stored result and sentence labels."""
    return session.exec(  # type: ignore[return-value]
        select(*ITEM_COLUMNS, BatchItem.result, DatasetItem.sentence_labels)
        .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
        .where(BatchItem.batch_id == batch_id)
        .order_by(DatasetItem.idx)
    ).all()


def sqlite_json_rows(*, session: Session, query: JsonQuery, batch_id: int) -> list[tuple[Any, ...]]:
    """One of the JSON queries of a batch, as plain tuples: on SQLite from the DB-API cursor (the SQLAlchemy Row
    layer costs more than the query here), on PostgreSQL through SQLAlchemy."""
    if session.get_bind().dialect.name == "postgresql":
        return [tuple(r) for r in session.execute(text(_POSTGRES_JSON[query]), {"b": batch_id})]
    dbapi = session.connection().connection.dbapi_connection
    return dbapi.execute(_SQLITE_JSON[query], {"b": batch_id}).fetchall()  # type: ignore[union-attr]


def has_json_queries(dialect: str) -> bool:
    """Whether sqlite_json_rows has this database's queries."""
    return dialect in ("sqlite", "postgresql")


def reference_ids(*, session: Session, batch_id: int) -> dict[int, int]:
    """Each item's reference document id."""
    q = (
        select(BatchItem.item_id, DatasetItem.reference_id)
        .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
        .where(BatchItem.batch_id == batch_id)
    )
    return dict(session.connection().execute(q).tuples().all())  # type: ignore[arg-type]


def sentence_labels(*, session: Session, dataset_id: int) -> list[list[dict[str, int]] | None]:
    """Every item's per-sentence votes ({worker: 0/1} per sentence), in dataset order."""
    q = select(DatasetItem.sentence_labels).where(DatasetItem.dataset_id == dataset_id)
    return list(session.exec(q.order_by(DatasetItem.idx)))


def method_item_rows(*, session: Session, batch_id: int) -> list[tuple[Any, ...]]:
    """item_id, status, score, human_score, human_label, document characters, candidate, extra, calls, prompt and
    completion tokens, latency_ms and n_unknown of each item, in dataset order."""
    return session.exec(  # type: ignore[return-value]
        select(
            BatchItem.item_id,
            BatchItem.status,
            BatchItem.score,
            DatasetItem.human_score,
            DatasetItem.human_label,
            Document.n_chars,
            DatasetItem.candidate,
            DatasetItem.extra,
            BatchItem.calls,
            BatchItem.prompt_tokens,
            BatchItem.completion_tokens,
            BatchItem.latency_ms,
            BatchItem.n_unknown,
        )
        .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
        .join(Document, Document.id == DatasetItem.reference_id)
        .where(BatchItem.batch_id == batch_id)
        .order_by(DatasetItem.idx)
    ).all()


# -- baseline values ---------------------------------------------------------------------------------------
def baseline_rows(
    *, session: Session, item_ids: Sequence[int], metrics: Sequence[str]
) -> list[tuple[int, int, str, float | None]]:
    """Stored baseline values (row id, item_id, metric, value) of these items and metrics."""
    rows: list[tuple[int, int, str, float | None]] = []
    for i in range(0, len(item_ids), _CHUNK):
        chunk = list(item_ids[i : i + _CHUNK])
        rows.extend(
            session.exec(
                select(BaselineScore.id, BaselineScore.item_id, BaselineScore.metric, BaselineScore.value).where(
                    col(BaselineScore.item_id).in_(chunk), col(BaselineScore.metric).in_(list(metrics))
                )
            ).all()  # type: ignore[arg-type]
        )
    return rows


def batch_baseline_rows(*, session: Session, batch_id: int, metrics: Sequence[str]) -> list[tuple[Any, ...]]:
    """baseline_rows of every item of a batch, by a join rather than a list of ids (no 50,000 bound values)."""
    q = (
        select(BaselineScore.id, BaselineScore.item_id, BaselineScore.metric, BaselineScore.value)
        .join(BatchItem, BatchItem.item_id == BaselineScore.item_id)
        .where(BatchItem.batch_id == batch_id, col(BaselineScore.metric).in_(list(metrics)))
    )
    return [tuple(r) for r in session.connection().execute(q)]


def baseline_stamp(*, session: Session, dataset_id: int) -> str:
    """Changes whenever a baseline value of the dataset's items is added."""
    n, last = session.exec(
        select(func.count(), func.max(BaselineScore.id))
        .join(DatasetItem, DatasetItem.id == BaselineScore.item_id)
        .where(DatasetItem.dataset_id == dataset_id)
    ).one()
    return f"{n}|{last}"


def add_baseline_values(*, session: Session, rows: list[dict[str, Any]]) -> None:
    """Store baseline values ({item_id, metric, value}) in one bulk insert."""
    if rows:
        session.execute(insert(BaselineScore), rows)


def item_texts(*, session: Session, item_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """Each item's reference text and candidate."""
    rows = session.exec(
        select(DatasetItem.id, Document.text, DatasetItem.candidate)
        .join(Document, Document.id == DatasetItem.reference_id)
        .where(col(DatasetItem.id).in_(list(item_ids)))
    ).all()
    return {r[0]: (r[1], r[2]) for r in rows}  # type: ignore[misc]


def human_judgments(
    *, session: Session, dataset_id: int, item_ids: Sequence[int]
) -> list[tuple[int, float | None, int | None]]:
    """id, human_score and human_label of these items of the dataset (items of other datasets are left out)."""
    return session.exec(  # type: ignore[return-value]
        select(DatasetItem.id, DatasetItem.human_score, DatasetItem.human_label).where(
            DatasetItem.dataset_id == dataset_id, col(DatasetItem.id).in_(list(item_ids))
        )
    ).all()
