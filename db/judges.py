"""Judge queries: a batch's items as a judge's predictions and costs, a dataset's human judgments and
annotator labels, and saved judge comparisons (keyword-only, `*, session`, typed results)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, text
from sqlmodel import Session, col, select

from db.models import (
    AnnotationAssignment,
    BaselineScore,
    Batch,
    BatchItem,
    BatchPublic,
    DatasetItem,
    JudgePanel,
    JudgePanelPublic,
    SentenceLabel,
)

# A judge's item: its status, score, unknown sentences and cost; judge_items' tuples hold these in this order.
JUDGE_ITEM_FIELDS = (
    "item_id",
    "status",
    "score",
    "n_sentences",
    "n_unknown",
    "calls",
    "cache_hits",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
)


@dataclass(frozen=True)
class HumanRow:
    """A dataset item with the human judgments it was imported with."""

    item_id: int
    idx: int
    external_id: str
    n_sentences: int
    human_score: float | None
    human_label: int | None


# What the Judges page needs of an evidence checker's stored result: read from the columns written with it
# (services/result_columns.py; `verdicts` is NULL on a row written without them), else taken out of the result
# by the database (in C), never by decoding every item's whole result in Python (7 KB an item: 2 GB of the app's
# memory at 50,000 items). CHECKER_PARTS names them; services.judges.data turns them into a prediction and a
# verdict, and reads the same parts from a decoded result where the database has no JSON functions:
#   checker_score  the result's own checker_score (a number), else NULL
#   round_checker  the first round's checker_score (a number), else NULL
#   support        the mean of the first round's sentences' evidence.support (numbers), NULL when none has one;
#                  read only when neither checker_score is there
#   flag           the first round's model_is_consistent: 1 or 0 (its truth), -1 when it is JSON null, NULL
#                  when the round has no such key
#   round_score    the first round's score (a number), else NULL; read only when there is no flag
# From the columns, checker_score is the prediction already (the first of the three).
# A JSON true or false where a number is expected counts as 1 or 0, as Python's isinstance(True, int) has it.
CHECKER_PARTS = ("checker_score", "round_checker", "support", "flag", "round_score")


def _sqlite_num(doc: str, path: str) -> str:
    return (
        f"(CASE json_type({doc}, '{path}') WHEN 'integer' THEN json_extract({doc}, '{path}') "
        f"WHEN 'real' THEN json_extract({doc}, '{path}') WHEN 'true' THEN 1.0 WHEN 'false' THEN 0.0 END)"
    )


def _pg_num(value: str) -> str:
    return (
        f"(CASE json_typeof({value}) WHEN 'number' THEN ({value} #>> '{{}}')::float "
        f"WHEN 'boolean' THEN (CASE WHEN ({value} #>> '{{}}') = 'true' THEN 1.0 ELSE 0.0 END) END)"
    )


_R0 = "bi.result -> 'rounds' -> 0"
_CHECKER_SQL = {
    "sqlite": f"""
SELECT bi.item_id,
       {_sqlite_num("bi.result", "$.checker_score")},
       {_sqlite_num("bi.result", "$.rounds[0].checker_score")},
       CASE WHEN {_sqlite_num("bi.result", "$.checker_score")} IS NULL
             AND {_sqlite_num("bi.result", "$.rounds[0].checker_score")} IS NULL
            THEN (SELECT AVG({_sqlite_num("s.value", "$.evidence.support")})
                  FROM json_each(bi.result, '$.rounds[0].sentences') s
                  WHERE json_type(s.value, '$.evidence') = 'object') END,
       CASE json_type(bi.result, '$.rounds[0].model_is_consistent')
            WHEN 'true' THEN 1 WHEN 'false' THEN 0 WHEN 'null' THEN -1
            WHEN 'integer' THEN json_extract(bi.result, '$.rounds[0].model_is_consistent') != 0
            WHEN 'real' THEN json_extract(bi.result, '$.rounds[0].model_is_consistent') != 0
            WHEN 'text' THEN length(json_extract(bi.result, '$.rounds[0].model_is_consistent')) > 0
            WHEN 'array' THEN json_array_length(bi.result, '$.rounds[0].model_is_consistent') > 0
            WHEN 'object' THEN json_extract(bi.result, '$.rounds[0].model_is_consistent') != '{{}}' END,
       {_sqlite_num("bi.result", "$.rounds[0].score")}
FROM batch_item bi
WHERE bi.batch_id = :b AND bi.verdicts IS NULL
UNION ALL
SELECT bi.item_id, bi.checker_score, NULL, NULL, bi.consistent,
       CASE WHEN bi.consistent IS NULL THEN {_sqlite_num("bi.result", "$.rounds[0].score")} END
FROM batch_item bi
WHERE bi.batch_id = :b AND bi.verdicts IS NOT NULL
""",
    "postgresql": f"""
SELECT bi.item_id,
       {_pg_num("bi.result -> 'checker_score'")},
       {_pg_num(_R0 + " -> 'checker_score'")},
       CASE WHEN {_pg_num("bi.result -> 'checker_score'")} IS NULL AND {_pg_num(_R0 + " -> 'checker_score'")} IS NULL
            THEN (SELECT AVG({_pg_num("s.value -> 'evidence' -> 'support'")})
                  FROM json_array_elements(CASE WHEN json_typeof({_R0} -> 'sentences') = 'array'
                                           THEN {_R0} -> 'sentences' END) s(value)
                  WHERE json_typeof(s.value -> 'evidence') = 'object') END,
       CASE json_typeof({_R0} -> 'model_is_consistent')
            WHEN 'boolean' THEN CASE WHEN ({_R0} ->> 'model_is_consistent') = 'true' THEN 1 ELSE 0 END
            WHEN 'null' THEN -1
            WHEN 'number' THEN CASE WHEN ({_R0} ->> 'model_is_consistent')::float != 0 THEN 1 ELSE 0 END
            WHEN 'string' THEN CASE WHEN length({_R0} ->> 'model_is_consistent') > 0 THEN 1 ELSE 0 END
            WHEN 'array' THEN CASE WHEN json_array_length({_R0} -> 'model_is_consistent') > 0 THEN 1 ELSE 0 END
            WHEN 'object' THEN CASE WHEN ({_R0} ->> 'model_is_consistent') != '{{}}' THEN 1 ELSE 0 END END,
       {_pg_num(_R0 + " -> 'score'")}
FROM batch_item bi
WHERE bi.batch_id = :b AND bi.verdicts IS NULL
UNION ALL
SELECT bi.item_id, bi.checker_score, NULL, NULL, bi.consistent,
       CASE WHEN bi.consistent IS NULL THEN {_pg_num(_R0 + " -> 'score'")} END
FROM batch_item bi
WHERE bi.batch_id = :b AND bi.verdicts IS NOT NULL
""",
}


def has_checker_parts(dialect: str) -> bool:
    """Whether checker_parts can take this database's results apart (else the caller decodes them)."""
    return dialect in _CHECKER_SQL


def judge_items(*, session: Session, batch_id: int, with_result: bool = False) -> list[tuple]:
    """The batch's items as tuples of JUDGE_ITEM_FIELDS (and the stored result, decoded, when `with_result`:
    for a database without JSON functions), in dataset order; a value the database has none of is None."""
    cols = [getattr(BatchItem, name) for name in JUDGE_ITEM_FIELDS]
    q = (
        (select(*cols, BatchItem.result) if with_result else select(*cols))
        .join(DatasetItem, col(DatasetItem.id) == BatchItem.item_id)
        .where(BatchItem.batch_id == batch_id)
        .order_by(col(DatasetItem.idx), col(DatasetItem.id))
    )
    result = session.connection().execute(q)
    if with_result:  # the JSON column needs SQLAlchemy's decoding
        return [tuple(r) for r in result.all()]
    # The driver's own tuples: these columns are numbers and text, which need no conversion, and SQLAlchemy's
    # rows cost more than the query at 100,000 items.
    try:
        return result.cursor.fetchall()  # type: ignore[union-attr]
    finally:
        result.close()


def checker_parts(*, session: Session, batch_id: int) -> dict[int, tuple]:
    """item id -> the CHECKER_PARTS of its stored result, as the database takes them out (SQLite, PostgreSQL)."""
    rows = session.connection().execute(text(_CHECKER_SQL[session.get_bind().dialect.name]), {"b": batch_id})
    return {int(r[0]): tuple(r[1:]) for r in rows}


def human_rows(*, session: Session, dataset_id: int) -> list[HumanRow]:
    """Every item of the dataset with its imported human score and label, in dataset order."""
    rows = session.connection().execute(  # plain rows through Core, as judge_items
        select(
            DatasetItem.id,
            DatasetItem.idx,
            DatasetItem.external_id,
            # counted by the database: decoding every item's sentences was most of the Judges page at 50,000 items
            func.json_array_length(DatasetItem.sentences),
            DatasetItem.human_score,
            DatasetItem.human_label,
        )
        .where(DatasetItem.dataset_id == dataset_id)
        .order_by(col(DatasetItem.idx), col(DatasetItem.id))
    )
    return [HumanRow(r[0], r[1], r[2], int(r[3] or 0) or 1, r[4], r[5]) for r in rows]  # type: ignore[arg-type]


def annotator_labels(*, session: Session, dataset_id: int) -> list[tuple[int, int, int, int]]:
    """(item id, annotator id, sentence index, label) of every annotator label in the dataset."""
    rows = session.exec(
        select(
            SentenceLabel.dataset_item_id, SentenceLabel.annotator_id, SentenceLabel.sentence_idx, SentenceLabel.label
        )
        .join(DatasetItem, col(DatasetItem.id) == SentenceLabel.dataset_item_id)
        .where(DatasetItem.dataset_id == dataset_id)
    ).all()
    return [(int(a), int(b), int(c), int(d)) for a, b, c, d in rows]  # type: ignore[arg-type]


def assignment_origins(*, session: Session, dataset_id: int) -> dict[int, str]:
    """item id -> how the item was first chosen for labelling (its earliest assignment's origin)."""
    rows = session.exec(
        select(AnnotationAssignment.dataset_item_id, AnnotationAssignment.origin)
        .where(AnnotationAssignment.dataset_id == dataset_id)
        .order_by(col(AnnotationAssignment.id).desc())
    ).all()
    return {int(i): str(o) for i, o in rows}  # ascending ids overwrite: the earliest wins


def batches(*, session: Session, batch_ids: Iterable[int]) -> list[BatchPublic]:
    """These batches, in the order given (ids that do not exist are left out)."""
    ids = list(batch_ids)
    found = {b.id: BatchPublic.model_validate(b) for b in session.exec(select(Batch).where(col(Batch.id).in_(ids)))}
    return [found[i] for i in ids if i in found]


def add_panel(*, session: Session, row: JudgePanel) -> JudgePanelPublic:
    session.add(row)
    session.flush()
    return JudgePanelPublic.model_validate(row)


def get_panel(*, session: Session, panel_id: int) -> JudgePanelPublic | None:
    row = session.get(JudgePanel, panel_id)
    return JudgePanelPublic.model_validate(row) if row else None


def _choice(row: JudgePanel) -> str:
    """A saved comparison's choice (dataset, judges, options) as one comparable string."""
    return json.dumps([row.dataset_id, list(row.batch_ids), dict(row.options)], sort_keys=True)


def list_panels(*, session: Session, limit: int = 200) -> list[JudgePanelPublic]:
    """Saved comparisons, newest first, one per distinct choice (the first row saved with it: older
    databases hold repeats of one choice)."""
    rows = session.exec(select(JudgePanel).order_by(col(JudgePanel.id))).all()
    first: dict[str, JudgePanel] = {}
    for r in rows:
        first.setdefault(_choice(r), r)
    kept = sorted(first.values(), key=lambda r: r.id or 0, reverse=True)[:limit]
    return [JudgePanelPublic.model_validate(r) for r in kept]


def find_panel(
    *, session: Session, dataset_id: int, batch_ids: list[int] | list[int | str], options: dict[str, Any]
) -> int | None:
    """The id of the first saved comparison with exactly these batches and options (None: there is none).

    `options` must be in the form JSON gives back (lists, not tuples): it is compared with what was stored."""
    rows = session.exec(
        select(JudgePanel).where(JudgePanel.dataset_id == dataset_id).order_by(col(JudgePanel.id))
    ).all()
    for r in rows:
        if list(r.batch_ids) == list(batch_ids) and dict(r.options) == options:
            return r.id
    return None


def labels_stamp(*, session: Session, dataset_id: int) -> str:
    """Changes whenever an annotator label of the dataset is written or changed: a cache key."""
    n, last = session.exec(
        select(func.count(), func.max(SentenceLabel.updated_at))
        .select_from(SentenceLabel)
        .join(DatasetItem, col(DatasetItem.id) == SentenceLabel.dataset_item_id)
        .where(DatasetItem.dataset_id == dataset_id)
    ).one()
    return f"{n}|{last}"


def score_columns(*, session: Session, dataset_id: int) -> list[str]:
    """The score columns (stored metrics) that some item of the dataset has."""
    rows = session.exec(
        select(BaselineScore.metric)
        .join(DatasetItem, col(DatasetItem.id) == BaselineScore.item_id)
        .where(DatasetItem.dataset_id == dataset_id)
        .distinct()
    ).all()
    return sorted(str(r) for r in rows)


def column_values(*, session: Session, dataset_id: int, metric: str) -> dict[int, float | None]:
    """item id -> value of one score column over the dataset's items."""
    rows = session.exec(
        select(BaselineScore.item_id, BaselineScore.value)
        .join(DatasetItem, col(DatasetItem.id) == BaselineScore.item_id)
        .where(DatasetItem.dataset_id == dataset_id, BaselineScore.metric == metric)
    ).all()
    return {int(i): v for i, v in rows}  # type: ignore[misc]


def external_ids(*, session: Session, dataset_id: int) -> dict[str, int]:
    """external id -> item id of the dataset's items."""
    rows = session.exec(
        select(DatasetItem.external_id, DatasetItem.id).where(DatasetItem.dataset_id == dataset_id)
    ).all()
    return {str(e): int(i) for e, i in rows}  # type: ignore[misc]


def replace_column(*, session: Session, item_ids: list[int], metric: str, rows: list[dict[str, Any]]) -> None:
    """Store a score column: drop its old values on these items, then add the new ones."""
    from sqlalchemy import delete

    session.exec(  # type: ignore[call-overload]
        delete(BaselineScore).where(col(BaselineScore.item_id).in_(item_ids), BaselineScore.metric == metric)
    )
    if rows:
        session.execute(insert(BaselineScore), rows)
