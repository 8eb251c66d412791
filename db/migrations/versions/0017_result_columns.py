"""What the pages read of a batch item's result, in columns of its own: the first round's sentence verdicts (a
letter each), its model_is_consistent, and the evidence checker's prediction

The Judges and Meta-evaluation pages read these for every item of a batch; taking them out of each stored result
(5-9 KB) was most of those pages' time and memory at 50,000 items. New results are written with them
(services/result_columns.py). Results written before are filled in here by the database's JSON functions, a
range of row ids at a time, by the same rules; on a database without them the columns stay NULL and the pages
read those rows' results as before.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-07 16:30:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

CHUNK = 5000  # rows of batch_item updated at a time


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


_MIC = "json_extract(result, '$.rounds[0].model_is_consistent')"
SQLITE = f"""
UPDATE batch_item SET
  verdicts = COALESCE((SELECT group_concat(CASE json_extract(s.value, '$.verdict') WHEN 'consistent' THEN 'c'
                                           WHEN 'inconsistent' THEN 'i' ELSE 'u' END, '')
                       FROM json_each(batch_item.result, '$.rounds[0].sentences') s), ''),
  consistent = CASE json_type(result, '$.rounds[0].model_is_consistent')
                 WHEN 'true' THEN 1 WHEN 'false' THEN 0 WHEN 'null' THEN -1
                 WHEN 'integer' THEN {_MIC} != 0 WHEN 'real' THEN {_MIC} != 0
                 WHEN 'text' THEN length({_MIC}) > 0
                 WHEN 'array' THEN json_array_length(result, '$.rounds[0].model_is_consistent') > 0
                 WHEN 'object' THEN {_MIC} != '{{}}' END,
  checker_score = COALESCE({_sqlite_num("result", "$.checker_score")},
                           {_sqlite_num("result", "$.rounds[0].checker_score")},
                           (SELECT AVG({_sqlite_num("s.value", "$.evidence.support")})
                            FROM json_each(batch_item.result, '$.rounds[0].sentences') s
                            WHERE json_type(s.value, '$.evidence') = 'object'))
WHERE id > :lo AND id <= :hi AND json_type(result) = 'object'
"""

_R0 = "result -> 'rounds' -> 0"
_SENTENCES = f"CASE WHEN json_typeof({_R0} -> 'sentences') = 'array' THEN {_R0} -> 'sentences' END"
POSTGRESQL = f"""
UPDATE batch_item SET
  verdicts = COALESCE((SELECT string_agg(CASE s.value ->> 'verdict' WHEN 'consistent' THEN 'c'
                                         WHEN 'inconsistent' THEN 'i' ELSE 'u' END, '' ORDER BY s.k)
                       FROM json_array_elements({_SENTENCES}) WITH ORDINALITY s(value, k)), ''),
  consistent = CASE json_typeof({_R0} -> 'model_is_consistent')
                 WHEN 'boolean' THEN CASE WHEN ({_R0} ->> 'model_is_consistent') = 'true' THEN 1 ELSE 0 END
                 WHEN 'null' THEN -1
                 WHEN 'number' THEN CASE WHEN ({_R0} ->> 'model_is_consistent')::float != 0 THEN 1 ELSE 0 END
                 WHEN 'string' THEN CASE WHEN length({_R0} ->> 'model_is_consistent') > 0 THEN 1 ELSE 0 END
                 WHEN 'array' THEN CASE WHEN json_array_length({_R0} -> 'model_is_consistent') > 0 THEN 1 ELSE 0 END
                 WHEN 'object' THEN CASE WHEN ({_R0} ->> 'model_is_consistent') != '{{}}' THEN 1 ELSE 0 END END,
  checker_score = COALESCE({_pg_num("result -> 'checker_score'")}, {_pg_num(_R0 + " -> 'checker_score'")},
                           (SELECT AVG({_pg_num("s.value -> 'evidence' -> 'support'")})
                            FROM json_array_elements({_SENTENCES}) s(value)
                            WHERE json_typeof(s.value -> 'evidence') = 'object'))
WHERE id > :lo AND id <= :hi AND json_typeof(result) = 'object'
"""


def upgrade() -> None:
    with op.batch_alter_table("batch_item", schema=None) as batch_op:
        batch_op.add_column(sa.Column("verdicts", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("consistent", sa.SmallInteger(), nullable=True))
        batch_op.add_column(sa.Column("checker_score", sa.Float(), nullable=True))
    conn = op.get_bind()
    fill = {"sqlite": SQLITE, "postgresql": POSTGRESQL}.get(conn.dialect.name)
    if fill is None:
        return  # no JSON functions here: the pages read these rows' results
    top = conn.execute(sa.text("SELECT MAX(id) FROM batch_item")).scalar() or 0
    for lo in range(0, top, CHUNK):
        conn.execute(sa.text(fill), {"lo": lo, "hi": lo + CHUNK})


def downgrade() -> None:
    with op.batch_alter_table("batch_item", schema=None) as batch_op:
        batch_op.drop_column("checker_score")
        batch_op.drop_column("consistent")
        batch_op.drop_column("verdicts")
