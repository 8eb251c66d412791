"""Meta-evaluation of a batch: how well the evaluator agrees with human judgments (DCR paper, section 4).

* Summary level (Tables 1-3): Pearson, Spearman and Kendall (tau-b) between each item's score and its human
  score, with bootstrap 95% intervals; AUROC against the binary human label; confusion, balanced accuracy,
  precision, recall and F1 at a threshold.
* Sentence level: the model's round-0 verdicts against the human majority of each sentence.
* Figure 3: DCE + AMC against DCE without AMC (the model's own `is_consistent`) and a paragraph-level batch.
* Baselines computed locally on the same items (ROUGE-2, ROUGE-L, MiniLM embedding similarity), side by side.
* RAI (Table 4, Figure 4): inconsistent items, corrected items, improvement rate; share consistent per round.
* Human agreement: Krippendorff's alpha among the workers, and between the model and the human majority.
* A reproducibility bundle: configuration, model, prompt ids and hashes, seeds, dataset hash.

The binary view follows the paper: an item is *consistent* when its score is 1 (every sentence judged
consistent) and *consistent* is the positive class of precision, recall and F1 (Fig. 3: "higher recall and
lower precision implies that more candidates are incorrectly marked as consistent"). Hence
DEFAULT_THRESHOLD = 1.0: a score below 1, i.e. any inconsistent sentence, flags the item. It is the threshold
of Table 4 and Figure 3, needs no tuning on the data being evaluated, and agrees with human labels built the
same way (QAGS: every sentence has a majority "yes"; SummEval: every expert gave 5). A lower threshold trades
recall for precision; the page's slider shows that, while AUROC summarises every threshold at once. Everything
here is plain Python (pandas, numpy and services.stats); the page caches the results.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import tomllib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import func, insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.pool import StaticPool
from sqlmodel import Session

from db.models import BaselineScore, Batch, BatchItem, BatchPublic, Dataset, DatasetItem, DatasetPublic, Document
from services import baselines as bl
from services import stats
from services.config import PROJECT_ROOT
from services.dcr import METHOD_LABELS
from services.prompts import dcr as prompts
from services.redact import is_secret_name, redact_url
from services.text import InputError

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 1.0
# Figure 3's reading (Appendix C.3): high recall with low precision means more candidates wrongly marked consistent,
# so "consistent" is the class precision, recall and F1 are about.
POSITIVE = 1
DEFAULT_SEED = 0
DEFAULT_BOOT = 1000
CONSISTENT_AT = 1.0 - 1e-9  # a score counts as "fully consistent" at 1 (Eq. 3 gives exactly 1.0 then)

BASELINE_METRICS: dict[str, str] = {
    "rouge2_precision": "ROUGE-2 (precision)",
    "rougeL_precision": "ROUGE-L (precision)",
    "evidence_lexical": "Evidence checker (offline, lexical; mean sentence score, not Eq. 3)",
    "embedding_minilm": "MiniLM embedding similarity",
}
ROUGE_METRICS = ("rouge2_precision", "rougeL_precision")
EMBEDDING_METRIC = "embedding_minilm"
# The offline evidence checker in its lexical mode: no torch needed, so it is always computed.
EVIDENCE_METRIC = "evidence_lexical"


# -- loading a batch -----------------------------------------------------------------------------
@dataclass(frozen=True)
class BatchData:
    """A batch's items, round-0 sentence verdicts and human votes, read once from the database."""

    batch: BatchPublic
    dataset: DatasetPublic | None
    items: pd.DataFrame  # batch_frame: one row per item
    sentences: pd.DataFrame  # one row per round-0 sentence of a done item: item_id, idx, verdict, human, n_votes
    votes: np.ndarray  # rating slots x sentences with human votes (1/0, NaN = no vote), for alpha (see _alpha_among)
    n_workers: int  # distinct rater ids among those votes
    n_vote_items: int  # items whose sentences carry votes
    n_misaligned: int  # done items whose sentence labels do not match their judged sentences one to one
    notes: tuple[str, ...] = ()
    has_sentences: bool = True  # False: loaded with sentences=False (items only; no verdicts or votes)
    label_counts: np.ndarray | None = None  # per item (in items' order): entries in its sentence labels

    @property
    def done(self) -> pd.DataFrame:
        """Items with a round-0 score."""
        return self.items[(self.items["status"] == "done") & self.items["score"].notna()]

    @property
    def is_paragraph(self) -> bool:
        return self.batch.method == "paragraph"


def batch_stamp(engine: Engine, batch_id: int) -> str:
    """Changes whenever the batch's results change (status, items finished, last write): a cache key."""
    with engine.connect() as conn:
        status = conn.execute(select(Batch.status, Batch.finished_at).where(Batch.id == batch_id)).first()
        if status is None:
            return "missing"
        n, last = conn.execute(
            select(func.count(), func.max(BatchItem.updated_at)).where(
                BatchItem.batch_id == batch_id, BatchItem.status.in_(("done", "failed"))
            )
        ).one()
    return f"{status[0]}|{status[1]}|{n}|{last}"


@dataclass
class _Raw:
    """What load_batch reads, before it becomes frames (the same from the SQL and the Python path)."""

    base: list[tuple]  # item_id, external_id, status, score, final_score, human_score, human_label, n_rounds,
    # n_sentences, n_unknown, model_is_consistent (round 0), n_label_entries; in dataset order
    rounds: list[tuple[int, int, float | None]]  # (item_id, round, score) for rounds between the first and last
    sentences: list[tuple[int, int, str]]  # (item_id, index, verdict) at round 0 of done items
    votes: list[tuple[int, int, int, int]]  # (item_id, sentence index, yes votes, votes) of every batch item
    n_workers: int


_BASE_COLUMNS = (
    BatchItem.item_id, DatasetItem.external_id, BatchItem.status, BatchItem.score, BatchItem.final_score,
    DatasetItem.human_score, DatasetItem.human_label, BatchItem.n_rounds, BatchItem.n_sentences, BatchItem.n_unknown,
)  # fmt: skip

# SQLite parses the JSON in C: about four times faster than json.loads of whole results in Python. A sentence's
# position in the round is its index (services.dcr.evaluate numbers them so).
_SQL_BASE = """
SELECT bi.item_id, json_extract(bi.result, '$.rounds[0].model_is_consistent'),
       json_array_length(di.sentence_labels)
FROM batch_item bi JOIN dataset_item di ON di.id = bi.item_id
WHERE bi.batch_id = :b
"""
_SQL_ROUNDS = """
SELECT bi.item_id, CAST(r.key AS INTEGER), json_extract(r.value, '$.score')
FROM batch_item bi, json_each(bi.result, '$.rounds') r
WHERE bi.batch_id = :b AND bi.n_rounds >= 3 AND r.key BETWEEN 1 AND bi.n_rounds - 2
"""
_SQL_SENTENCES = """
SELECT bi.item_id, CAST(s.key AS INTEGER), json_extract(s.value, '$.verdict')
FROM batch_item bi, json_each(bi.result, '$.rounds[0].sentences') s
WHERE bi.batch_id = :b AND bi.status = 'done'
"""
_SQL_VOTES = """
SELECT bi.item_id, CAST(l.key AS INTEGER), SUM(v.value), COUNT(*)
FROM batch_item bi JOIN dataset_item di ON di.id = bi.item_id, json_each(di.sentence_labels) l, json_each(l.value) v
WHERE bi.batch_id = :b
GROUP BY bi.item_id, l.key
"""
_SQL_WORKERS = """
SELECT COUNT(DISTINCT v.key)
FROM batch_item bi JOIN dataset_item di ON di.id = bi.item_id, json_each(di.sentence_labels) l, json_each(l.value) v
WHERE bi.batch_id = :b
"""


def _sql_rows(engine: Engine, sql: str, batch_id: int) -> list[tuple]:
    """Plain tuples from the DB-API cursor (the SQLAlchemy Row layer costs more than the query here)."""
    with engine.connect() as conn:
        return conn.connection.dbapi_connection.execute(sql, {"b": batch_id}).fetchall()  # type: ignore[union-attr]


def _parallel(engine: Engine, batch_id: int, queries: Sequence[str]) -> list[list[tuple]]:
    if isinstance(engine.pool, StaticPool) or len(queries) < 2:  # one shared connection (in-memory): in turn
        return [_sql_rows(engine, q, batch_id) for q in queries]
    # sqlite3 lets go of the GIL while SQLite parses JSON: the queries run side by side on pooled connections.
    with ThreadPoolExecutor(max_workers=len(queries), thread_name_prefix="metaeval-sql") as pool:
        return list(pool.map(lambda q: _sql_rows(engine, q, batch_id), queries))


def _read_sql_items(engine: Engine, batch_id: int) -> _Raw:
    with engine.connect() as conn:
        plain = conn.execute(
            select(*_BASE_COLUMNS)
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .where(BatchItem.batch_id == batch_id)
            .order_by(DatasetItem.idx)
        ).all()
    extra, rounds = _parallel(engine, batch_id, (_SQL_BASE, _SQL_ROUNDS))
    flags = {r[0]: (r[1], r[2]) for r in extra}
    base = []
    for r in plain:
        flag, n_labels = flags.get(r[0], (None, None))
        base.append((*r, None if flag is None else bool(flag), n_labels or 0))
    return _Raw(base, rounds, [], [], 0)


def _read_sql_sentences(engine: Engine, batch_id: int) -> _Raw:
    sents, votes, workers = _parallel(engine, batch_id, (_SQL_SENTENCES, _SQL_VOTES, _SQL_WORKERS))
    return _Raw([], [], sents, votes, int(workers[0][0] or 0) if workers else 0)


def _read_python(engine: Engine, batch_id: int) -> _Raw:
    with engine.connect() as conn:
        rows = conn.execute(
            select(*_BASE_COLUMNS, BatchItem.result, DatasetItem.sentence_labels)
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .where(BatchItem.batch_id == batch_id)
            .order_by(DatasetItem.idx)
        ).all()
    base, rounds_out, sentences, votes = [], [], [], []
    workers: set[str] = set()
    for r in rows:
        item_id, result, labels = r[0], r[10] or {}, r[11] or []
        rounds = result.get("rounds") or []
        flag = rounds[0].get("model_is_consistent") if rounds else None
        base.append((*r[:10], None if flag is None else bool(flag), len(labels)))
        for k in range(1, len(rounds) - 1):
            rounds_out.append((item_id, k, rounds[k].get("score")))
        if r[2] == "done" and rounds:
            sentences.extend(
                (item_id, int(s.get("index", 0)), str(s.get("verdict") or "unknown"))
                for s in rounds[0].get("sentences") or []
            )
        for k, v in enumerate(labels):
            if v:
                workers.update(v)
                votes.append((item_id, k, sum(int(x) for x in v.values()), len(v)))
    return _Raw(base, rounds_out, sentences, votes, len(workers))


def load_batch(engine: Engine, batch_id: int, *, sentences: bool = True, sql_json: bool | None = None) -> BatchData:
    """Everything the meta-evaluation needs about a batch; InputError for an unknown id.

    sentences=False reads the items only (scores, human judgments, rounds): enough for the summary level,
    Figure 3, the baselines and RAI, and several times faster on large batches (add_sentences reads the rest
    later). On SQLite the JSON results are taken apart by the database (sql_json=None picks that by dialect);
    elsewhere in Python. Both give the same data.
    """
    with Session(engine) as session:
        b = session.get(Batch, batch_id)
        if b is None:
            raise InputError(f"Batch {batch_id} does not exist.")
        batch = BatchPublic.model_validate(b)
        ds = session.get(Dataset, b.dataset_id)
        dataset = DatasetPublic.model_validate(ds) if ds else None
    if not _use_sql(engine, sql_json):
        raw = _read_python(engine, batch_id)
        data = _with_documents(engine, batch_id, _assemble_items(batch, dataset, raw))
        return _assemble_sentences(data, raw) if sentences else data
    data = _with_documents(engine, batch_id, _assemble_items(batch, dataset, _read_sql_items(engine, batch_id)))
    return add_sentences(engine, data, sql_json=True) if sentences else data


def _with_documents(engine: Engine, batch_id: int, data: BatchData) -> BatchData:
    """Each item's reference document id: summaries of one document are grouped for Table 2's correlation."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(BatchItem.item_id, DatasetItem.reference_id)
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .where(BatchItem.batch_id == batch_id)
        ).all()
    docs = dict(rows)
    data.items["document_id"] = [docs.get(int(i)) for i in data.items["item_id"]]
    return data


def add_sentences(engine: Engine, data: BatchData, *, sql_json: bool | None = None) -> BatchData:
    """The batch data with its round-0 sentence verdicts and the human votes (for data loaded without)."""
    if data.has_sentences:
        return data
    raw = (
        _read_sql_sentences(engine, data.batch.id)
        if _use_sql(engine, sql_json)
        else _read_python(engine, data.batch.id)
    )
    return _assemble_sentences(data, raw)


def _use_sql(engine: Engine, sql_json: bool | None) -> bool:
    return engine.dialect.name == "sqlite" if sql_json is None else sql_json


def _frame(rows: list[tuple], columns: list[str], dtype: str | None) -> pd.DataFrame:
    """A frame from row tuples via one 2-D object array: no per-column tuples, whose allocation can set off
    a full garbage collection of the whole server heap (a quarter of a second at 50,000 rows)."""
    if not rows:
        return pd.DataFrame({c: np.asarray([], dtype=dtype or object) for c in columns})
    arr = np.array(rows, dtype=object).reshape(len(rows), len(columns))
    return pd.DataFrame({c: arr[:, k].astype(dtype) if dtype else arr[:, k] for k, c in enumerate(columns)})


def _assemble_items(batch: BatchPublic, dataset: DatasetPublic | None, raw: _Raw) -> BatchData:
    cols = [
        "item_id", "external_id", "status", "score", "final_score", "human_score", "human_label", "n_rounds",
        "n_sentences", "n_unknown", "model_is_consistent", "n_labels",
    ]  # fmt: skip
    base = pd.DataFrame(raw.base, columns=cols)
    n = len(base)
    items = pd.DataFrame(
        {
            "item_id": base["item_id"].astype("int64"),
            "external_id": base["external_id"].astype(str),
            "status": base["status"].astype(str),
            **{c: pd.to_numeric(base[c], errors="coerce").astype(float)
               for c in ("score", "final_score", "human_score", "human_label")},
            "model_is_consistent": pd.array(base["model_is_consistent"].tolist(), dtype="boolean"),
            **{c: base[c].fillna(0).astype("int64") for c in ("n_rounds", "n_sentences", "n_unknown")},
        }
    )  # fmt: skip
    # Round scores: round 0 is `score`, the last round is `final_score`, the ones between come from the results.
    n_rounds = items["n_rounds"].to_numpy()
    max_rounds = int(n_rounds.max()) if n else 0
    mat = np.full((n, max(max_rounds, 1)), np.nan)
    has = n_rounds >= 1
    mat[has, 0] = items["score"].to_numpy()[has]
    mat[has, n_rounds[has] - 1] = items["final_score"].to_numpy()[has]
    if raw.rounds:
        pos = pd.Series(np.arange(n), index=items["item_id"].to_numpy())
        r = pd.DataFrame(raw.rounds, columns=["item_id", "round", "score"])
        mat[pos.loc[r["item_id"]].to_numpy(), r["round"].to_numpy(dtype=int)] = pd.to_numeric(r["score"]).to_numpy(
            dtype=float
        )
    for k in range(max_rounds):
        items[f"score_r{k}"] = mat[:, k]
    notes = []
    if batch.status in ("queued", "running"):
        finished = int(items["status"].isin(("done", "failed")).sum())
        notes.append(
            f"Batch #{batch.id} is still {batch.status}: {finished:,} of {n:,} items finished. These figures cover "
            "the finished items only and will change."
        )
    elif batch.status == "cancelled":
        notes.append(f"Batch #{batch.id} was cancelled: the figures cover the items it finished.")
    n_failed = int((items["status"] == "failed").sum())
    if n_failed:
        notes.append(f"{n_failed:,} item(s) failed and are left out (re-run them on the Batches page).")
    return BatchData(
        batch=batch, dataset=dataset, items=items, sentences=_EMPTY_SENTENCES, votes=np.zeros((0, 0)), n_workers=0,
        n_vote_items=0, n_misaligned=0, notes=tuple(notes), has_sentences=False,
        label_counts=base["n_labels"].fillna(0).astype("int64").to_numpy(),
    )  # fmt: skip


_EMPTY_SENTENCES = pd.DataFrame(
    {"item_id": np.zeros(0, np.int64), "idx": np.zeros(0, np.int64), "verdict": np.zeros(0, object),
     "human": np.zeros(0), "n_votes": np.zeros(0, np.int64)}
)  # fmt: skip


def _assemble_sentences(data: BatchData, raw: _Raw) -> BatchData:
    items = data.items
    # Human votes per sentence: yes / total gives the majority (a tie has none) and, for alpha, the values.
    votes = _frame(raw.votes, ["item_id", "idx", "yes", "total"], "int64")
    sent = _frame(raw.sentences, ["item_id", "idx", "verdict"], None)
    sent["verdict"] = sent["verdict"].fillna("unknown").astype(str)
    sent = sent.astype({"item_id": "int64", "idx": "int64"})
    judged = sent.groupby("item_id").size()
    labels = pd.Series(data.label_counts, index=items["item_id"].to_numpy())
    done_ids = items.loc[items["status"] == "done", "item_id"].to_numpy()
    has_labels = labels.loc[done_ids][labels.loc[done_ids] > 0]
    aligned_ids = has_labels.index[has_labels.to_numpy() == judged.reindex(has_labels.index).fillna(-1).to_numpy()]
    if data.is_paragraph:
        aligned_ids = aligned_ids[:0]
    misaligned = len(has_labels) - len(aligned_ids)
    sent = sent.merge(votes, on=["item_id", "idx"], how="left")
    usable = sent["item_id"].isin(aligned_ids) & sent["total"].notna()
    yes, total = sent["yes"].to_numpy(dtype=float), sent["total"].to_numpy(dtype=float)
    human = np.where(2 * yes > total, 1.0, np.where(2 * yes < total, 0.0, np.nan))
    sent["human"] = np.where(usable, human, np.nan)
    sent["n_votes"] = np.where(usable, total, 0).astype("int64")
    # Alpha among humans needs only how many raters said yes and no in each sentence (see _alpha_among).
    v_yes, v_total = votes["yes"].to_numpy(), votes["total"].to_numpy()
    slots = int(v_total.max()) if len(votes) else 0
    s = np.arange(slots)[:, None]
    vote_matrix = np.where(s < v_yes[None, :], 1.0, np.where(s < v_total[None, :], 0.0, np.nan))
    return replace(
        data, sentences=sent[["item_id", "idx", "verdict", "human", "n_votes"]].reset_index(drop=True),
        votes=vote_matrix, n_workers=raw.n_workers, n_vote_items=int(votes["item_id"].nunique()),
        n_misaligned=misaligned, has_sentences=True,
    )  # fmt: skip


def _with_sentences(data: BatchData) -> BatchData:
    if not data.has_sentences:
        raise ValueError("this needs the sentences: load the batch with sentences=True")
    return data


def batch_frame(engine: Engine, batch_id: int) -> pd.DataFrame:
    """One row per item: ids, status, score, final_score, human_score, human_label, model_is_consistent
    (round 0), n_rounds and the score of each round (score_r0, score_r1, ...)."""
    return load_batch(engine, batch_id, sentences=False).items


# -- summary level -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Correlations:
    """Correlations of the score with the human score, and AUROC against the human label."""

    n_items: int
    correlations: tuple[stats.CorrelationResult, ...]
    auroc: stats.AurocResult
    n_boot: int
    seed: int
    notes: tuple[str, ...] = ()
    per_document: tuple[stats.GroupedCorrelation, ...] = ()  # Table 2 (SummEval): mean of per-document values

    def frame(self) -> pd.DataFrame:
        """One row per statistic: name, n, value, 95% interval, p, note. Pooled rows are over all items; rows
        named "... (per document)" average each document's correlation (DCR Table 2, as G-Eval computes it)."""
        rows = [
            {"statistic": c.method, "n": c.n, "value": c.r, "ci_low": c.ci_low, "ci_high": c.ci_high, "p": c.p,
             "note": ((c.note or "") + (" Pooled over all items." if self.per_document else "")).strip()}
            for c in self.correlations
        ]  # fmt: skip
        rows += [
            {"statistic": f"{g.method} (per document)", "n": g.n_items, "value": g.r, "ci_low": None,
             "ci_high": None, "p": None,
             "note": (g.note or f"Mean over {g.n_groups} documents; {g.n_skipped} skipped (one side constant).")}
            for g in self.per_document
        ]  # fmt: skip
        a = self.auroc
        rows.append(
            {"statistic": "auroc", "n": a.n_pos + a.n_neg, "value": a.auc, "ci_low": a.ci_low, "ci_high": a.ci_high,
             "p": None, "note": a.note or ""}
        )  # fmt: skip
        return pd.DataFrame(rows)


def _clean(values: pd.Series | np.ndarray) -> np.ndarray:
    return np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float)


def correlations(
    df: pd.DataFrame, *, seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_BOOT, score: str = "score"
) -> Correlations:
    """Pearson, Spearman, Kendall of `score` against human_score, and AUROC against human_label."""
    d = df[df[score].notna()] if score in df else df.iloc[0:0]
    x, hs, hl = _clean(d[score]), _clean(d["human_score"]), _clean(d["human_label"])
    notes = []
    if not np.isfinite(hs).any():
        notes.append("This dataset has no human scores: correlations need them (QAGS, SummEval or a score column).")
    if not np.isfinite(hl).any():
        notes.append("This dataset has no binary human labels: AUROC and the classification need them.")
    corr = tuple(stats.correlation(x, hs, m, n_boot=n_boot, seed=seed) for m in stats.METHODS)  # type: ignore[arg-type]
    auc = stats.auroc(x, hl, n_boot=n_boot, seed=seed)
    per_doc: tuple[stats.GroupedCorrelation, ...] = ()
    if "document_id" in d and d["document_id"].duplicated().any():  # several summaries per document (SummEval)
        per_doc = tuple(stats.per_group_correlation(x, hs, d["document_id"].to_numpy(), m) for m in stats.METHODS)  # type: ignore[arg-type]
        notes.append(
            "Several summaries share a document: the per-document rows average each document's correlation, as "
            "the DCR paper's Table 2 (after Zhong et al. and G-Eval) does; the pooled rows correlate all items at once."
        )
    return Correlations(len(d), corr, auc, n_boot, seed, tuple(notes), per_doc)


def at_threshold(
    df: pd.DataFrame, threshold: float = DEFAULT_THRESHOLD, *, score: str = "score", positive: int = POSITIVE
) -> stats.ClassificationResult:
    """Confusion and metrics when score >= threshold predicts "consistent" (by default the positive class, as
    DCR's Fig. 3 reads it; the paradigms paper's recall is of the inconsistent class, positive=0)."""
    d = df[df[score].notna()]
    return stats.classification(_clean(d[score]), _clean(d["human_label"]), threshold, positive=positive)  # type: ignore[arg-type]


@dataclass(frozen=True)
class SummaryLevel:
    """Correlations with CIs, AUROC, and the classification at a threshold."""

    correlations: Correlations
    classification: stats.ClassificationResult


def summary_level(
    df: pd.DataFrame, *, threshold: float = DEFAULT_THRESHOLD, seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_BOOT
) -> SummaryLevel:
    """The summary-level meta-evaluation of a batch_frame (done items with a score)."""
    done = df[(df["status"] == "done") & df["score"].notna()] if "status" in df else df
    return SummaryLevel(correlations(done, seed=seed, n_boot=n_boot), at_threshold(done, threshold))


def classification_frame(c: stats.ClassificationResult) -> pd.DataFrame:
    """A classification result as one table row (consistent = positive)."""
    return pd.DataFrame(
        [{"threshold": c.threshold, "n": c.n, "tp": c.tp, "fp": c.fp, "fn": c.fn, "tn": c.tn,
          "balanced_accuracy": c.balanced_accuracy, "precision": c.precision, "recall": c.recall, "f1": c.f1,
          "note": c.note or ""}]
    )  # fmt: skip


def confusion_frame(c: stats.ClassificationResult) -> pd.DataFrame:
    """The 2x2 confusion matrix with human labels as rows and predictions as columns."""
    # tp/fp/fn/tn are about c.positive: map them back to (human, predicted) cells.
    pos, neg = ("consistent", "inconsistent") if c.positive == 1 else ("inconsistent", "consistent")
    cells = {(pos, pos): c.tp, (neg, pos): c.fp, (pos, neg): c.fn, (neg, neg): c.tn}
    order = ("inconsistent", "consistent")
    return pd.DataFrame(
        {f"predicted {p}": [cells[(h, p)] for h in order] for p in order},
        index=pd.Index([f"human: {h}" for h in order], name="human label"),
    )


# -- sentence level ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SentenceLevel:
    """The model's round-0 sentence verdicts against the human majority of each sentence."""

    n_sentences: int  # round-0 sentences of done items
    n_labelled: int  # of those, with human votes
    n_compared: int
    n_unknown: int  # model said neither consistent nor inconsistent: left out
    n_ties: int  # the human votes tie: no majority, left out
    n_misaligned_items: int
    classification: stats.ClassificationResult | None
    notes: tuple[str, ...] = ()


def sentence_level(
    engine: Engine | None = None, batch_id: int | None = None, *, data: BatchData | None = None
) -> SentenceLevel:
    """Confusion, balanced accuracy and P/R/F1 (consistent = positive) of the model's sentence verdicts."""
    data = _with_sentences(data or load_batch(engine, batch_id))  # type: ignore[arg-type]
    s = data.sentences
    notes = []
    if data.is_paragraph:
        notes.append(
            "This batch used the paragraph-level evaluator: it gives one verdict per summary, not per sentence."
        )
    labelled = s[s["n_votes"] > 0]
    ties = int(labelled["human"].isna().sum())
    unknown = int((labelled["verdict"] == "unknown").sum())
    usable = labelled[labelled["human"].notna() & labelled["verdict"].isin(("consistent", "inconsistent"))]
    if labelled.empty and not data.is_paragraph:
        notes.append(
            "No per-sentence human labels for these items (QAGS worker votes, or a sentence_labels column): "
            "nothing to compare the sentence verdicts with."
        )
    if data.n_misaligned:
        notes.append(
            f"{data.n_misaligned} item(s) were judged on a different number of sentences than their labels cover; "
            "they are left out."
        )
    if unknown:
        notes.append(f"{unknown:,} labelled sentence(s) had no verdict from the model (unknown) and are left out.")
    if ties:
        notes.append(f"{ties:,} labelled sentence(s) have tied human votes (no majority) and are left out.")
    cls = None
    if not usable.empty:
        pred = (usable["verdict"] == "consistent").astype(float).to_numpy()
        cls = stats.classification(pred, usable["human"].to_numpy(), 0.5, positive=POSITIVE)
    return SentenceLevel(len(s), len(labelled), len(usable), unknown, ties, data.n_misaligned, cls, tuple(notes))


# -- Figure 3 --------------------------------------------------------------------------------------
_LEVEL = {
    "dce-amc": "Sentence level (DCE)", "paragraph": "Paragraph level", "evidence": "Evidence checker",
    "summ-nli": "Summ-NLI", "sent-nli": "Sent-NLI", "qg-qa": "QG-QA",
}  # fmt: skip


def _method_name(batch: BatchPublic) -> str:
    return _LEVEL.get(batch.method, METHOD_LABELS.get(batch.method, batch.method))


def _scored_name(batch: BatchPublic) -> str:
    """The row of a batch judged by its score: '... + AMC (rule)' for the model's methods."""
    if batch.method in ("dce-amc", "paragraph"):
        return f"{_method_name(batch)} + AMC ({batch.amc})"
    return f"{_method_name(batch)} (score < 1)"


@dataclass(frozen=True)
class Figure3:
    """Precision, recall and F1 (consistent = positive) of each evaluator variant at summary level."""

    frame: pd.DataFrame  # evaluator, batch, n, tp, fp, fn, tn, precision, recall, f1, balanced_accuracy, note
    notes: tuple[str, ...] = ()


def _binary_row(name: str, batch_id: int, pred_consistent: pd.Series, labels: pd.Series) -> dict[str, Any]:
    keep = pred_consistent.notna() & labels.notna()
    c = stats.classification(
        pred_consistent[keep].astype(float).to_numpy(), labels[keep].astype(float).to_numpy(), 0.5, positive=POSITIVE
    )
    return {
        "evaluator": name, "batch": batch_id, "n": c.n, "tp": c.tp, "fp": c.fp, "fn": c.fn, "tn": c.tn,
        "precision": c.precision, "recall": c.recall, "f1": c.f1, "balanced_accuracy": c.balanced_accuracy,
        "note": c.note or "",
    }  # fmt: skip


def figure3(
    engine: Engine | None = None,
    dce_batch_id: int | None = None,
    other_batch_id: int | None = None,
    *,
    data: BatchData | None = None,
    other: BatchData | None = None,
) -> Figure3:
    """Figure 3: DCE + AMC (score < 1) vs DCE without AMC (is_consistent false) vs another batch (score < 1).

    Binary at summary level against the human label; "consistent" is the positive class. With a second
    batch over the same dataset, every row is computed on the items both batches finished.
    """
    data = data or load_batch(engine, dce_batch_id)  # type: ignore[arg-type]
    if other is None and other_batch_id is not None:
        other = load_batch(engine, other_batch_id)  # type: ignore[arg-type]
    notes: list[str] = []
    d = data.done.set_index("item_id")
    if other is not None and other.batch.dataset_id != data.batch.dataset_id:
        notes.append(
            f"Batch #{other.batch.id} ran over another dataset: Figure 3 compares evaluators on the same items."
        )
        other = None
    o = None
    if other is not None:
        o = other.done.set_index("item_id")
        common = d.index.intersection(o.index)
        if len(common) < len(d) or len(common) < len(o):
            notes.append(f"Compared on the {len(common):,} items both batches finished.")
        d, o = d.loc[common], o.loc[common]
    if d.empty:
        notes.append("No finished item with a score yet.")
    if d["human_label"].isna().all():
        notes.append("This dataset has no binary human labels: Figure 3 needs them.")
    rows = [
        _binary_row(_scored_name(data.batch), data.batch.id, (d["score"] >= CONSISTENT_AT).astype(float),
                    d["human_label"])
    ]  # fmt: skip
    n_flag = int(d["model_is_consistent"].isna().sum())
    # The model's own is_consistent: DCE without AMC. Only the DCE methods have one (the evidence checker's and
    # the NLI methods' flag is their own verdict, not a model's answer without AMC).
    if n_flag < len(d) and data.batch.method in ("dce-amc", "paragraph"):
        rows.append(
            _binary_row(
                f"{_method_name(data.batch)} without AMC (model's is_consistent)", data.batch.id,
                d["model_is_consistent"].astype("Float64").astype(float), d["human_label"],
            )
        )  # fmt: skip
        if n_flag:
            notes.append(
                f"{n_flag:,} item(s) have no is_consistent from the model and are left out of the row without AMC."
            )
    if other is not None and o is not None:
        rows.append(
            _binary_row(_scored_name(other.batch), other.batch.id, (o["score"] >= CONSISTENT_AT).astype(float),
                        o["human_label"])
        )  # fmt: skip
    return Figure3(pd.DataFrame(rows), tuple(notes))


# -- baselines (Tables 1-3) --------------------------------------------------------------------------
def cached_baselines(engine: Engine, item_ids: Sequence[int]) -> pd.DataFrame:
    """Stored baseline values: one row per item id (index), one column per metric (NaN when missing)."""
    ids = [int(i) for i in item_ids]
    frames = []
    with engine.connect() as conn:
        for i in range(0, len(ids), 5000):
            chunk = ids[i : i + 5000]
            frames.append(
                pd.DataFrame(
                    conn.execute(
                        select(BaselineScore.id, BaselineScore.item_id, BaselineScore.metric, BaselineScore.value)
                        .where(BaselineScore.item_id.in_(chunk), BaselineScore.metric.in_(list(BASELINE_METRICS)))
                    ).all(),
                    columns=["id", "item_id", "metric", "value"],
                )
            )  # fmt: skip
    long = pd.concat(frames) if frames else pd.DataFrame(columns=["id", "item_id", "metric", "value"])
    # Two writers racing on the same item leave duplicates: the latest row wins.
    long = long.sort_values("id").drop_duplicates(["item_id", "metric"], keep="last")
    wide = long.pivot(index="item_id", columns="metric", values="value") if not long.empty else pd.DataFrame()
    wide = wide.reindex(index=pd.Index(ids, name="item_id"), columns=list(BASELINE_METRICS))
    return wide.astype(float)


def baseline_stamp(engine: Engine, dataset_id: int) -> str:
    """Changes whenever a baseline value of the dataset's items is added: a cache key."""
    with engine.connect() as conn:
        n, last = conn.execute(
            select(func.count(), func.max(BaselineScore.id))
            .join(DatasetItem, DatasetItem.id == BaselineScore.item_id)
            .where(DatasetItem.dataset_id == dataset_id)
        ).one()
    return f"{n}|{last}"


def wanted_metrics(with_embeddings: bool) -> list[str]:
    return [*ROUGE_METRICS, EVIDENCE_METRIC, *([EMBEDDING_METRIC] if with_embeddings else [])]


def missing_baselines(engine: Engine, item_ids: Sequence[int], *, with_embeddings: bool) -> dict[str, int]:
    """How many of the items lack each baseline metric."""
    have = cached_baselines(engine, item_ids)
    return {m: int(have[m].isna().sum()) for m in wanted_metrics(with_embeddings)}


def compute_baselines(
    engine: Engine,
    item_ids: Sequence[int],
    *,
    with_embeddings: bool,
    on_progress: Callable[[int, int, str], None] | None = None,
    rouge_chunk: int = 500,
    embedding_chunk: int = 64,
) -> dict[str, int]:
    """Compute the missing baseline values and store them (bulk insert, chunk by chunk); returns counts added.

    Each chunk is saved as it is done, so an interrupted run loses at most one chunk and the next call
    continues with what is still missing.
    """
    have = cached_baselines(engine, item_ids)
    todo = {m: [int(i) for i in have.index[have[m].isna()]] for m in wanted_metrics(with_embeddings)}
    if with_embeddings and todo.get(EMBEDDING_METRIC) and not bl.embeddings_available()[0]:
        raise InputError(bl.embeddings_available()[1])
    rouge_ids = sorted(set(todo.get(ROUGE_METRICS[0], [])) | set(todo.get(ROUGE_METRICS[1], [])))
    emb_ids = todo.get(EMBEDDING_METRIC, [])
    total = len(rouge_ids) + len(emb_ids) + len(todo.get(EVIDENCE_METRIC, []))
    added = {m: 0 for m in todo}
    wanted = {m: set(ids) for m, ids in todo.items()}
    done = 0
    if on_progress and total:
        on_progress(0, total, "ROUGE" if rouge_ids else "embeddings")

    def texts(ids: list[int]) -> tuple[list[str], list[str]]:
        with engine.connect() as conn:
            rows = dict(
                (r[0], (r[1], r[2]))
                for r in conn.execute(
                    select(DatasetItem.id, Document.text, DatasetItem.candidate)
                    .join(Document, Document.id == DatasetItem.reference_id)
                    .where(DatasetItem.id.in_(ids))
                ).all()
            )
        return [rows[i][0] for i in ids], [rows[i][1] for i in ids]

    def store(rows: list[dict[str, Any]]) -> None:
        if rows:
            with engine.begin() as conn:
                conn.execute(insert(BaselineScore), rows)

    for k in range(0, len(rouge_ids), rouge_chunk):
        ids = rouge_ids[k : k + rouge_chunk]
        refs, cands = texts(ids)
        scores = bl.rouge_scores(refs, cands)
        rows = []
        for i, sc in zip(ids, scores, strict=True):
            for m in ROUGE_METRICS:
                if i in wanted.get(m, ()):
                    rows.append({"item_id": i, "metric": m, "value": sc[m]})
                    added[m] += 1
        store(rows)
        done += len(ids)
        if on_progress:
            on_progress(done, total, "ROUGE")
    ev_ids = todo.get(EVIDENCE_METRIC, [])
    for k in range(0, len(ev_ids), rouge_chunk):
        from services.dcr import evidence

        ids = ev_ids[k : k + rouge_chunk]
        refs, cands = texts(ids)
        values = evidence.scores(refs, cands, embedder=evidence.lexical_only)
        store([{"item_id": i, "metric": EVIDENCE_METRIC, "value": v} for i, v in zip(ids, values, strict=True)])
        added[EVIDENCE_METRIC] += len(ids)
        done += len(ids)
        if on_progress:
            on_progress(done, total, "evidence checker")
    for k in range(0, len(emb_ids), embedding_chunk):
        ids = emb_ids[k : k + embedding_chunk]
        refs, cands = texts(ids)
        sims = bl.embedding_similarity(refs, cands) or [math.nan] * len(ids)
        store([{"item_id": i, "metric": EMBEDDING_METRIC, "value": None if math.isnan(v) else v}
               for i, v in zip(ids, sims, strict=True)])  # fmt: skip
        added[EMBEDDING_METRIC] += len(ids)
        done += len(ids)
        if on_progress:
            on_progress(done, total, "embeddings")
    return added


def _metric_row(name: str, x: np.ndarray, hs: np.ndarray, hl: np.ndarray, *, seed: int, n_boot: int) -> dict[str, Any]:
    row: dict[str, Any] = {"metric": name, "n": int(np.isfinite(x).sum())}
    notes = []
    for m in stats.METHODS:
        c = stats.correlation(x, hs, m, n_boot=n_boot, seed=seed)  # type: ignore[arg-type]
        row[m], row[f"{m}_ci_low"], row[f"{m}_ci_high"] = c.r, c.ci_low, c.ci_high
        if c.note and m == "pearson":
            notes.append(c.note)
    a = stats.auroc(x, hl, n_boot=n_boot, seed=seed)
    row["auroc"], row["auroc_ci_low"], row["auroc_ci_high"] = a.auc, a.ci_low, a.ci_high
    if a.note:
        notes.append(a.note)
    row["note"] = " ".join(dict.fromkeys(notes))
    return row


TABLE_COLUMNS = [
    "metric", "n", "pearson", "pearson_ci_low", "pearson_ci_high", "spearman", "spearman_ci_low", "spearman_ci_high",
    "kendall", "kendall_ci_low", "kendall_ci_high", "auroc", "auroc_ci_low", "auroc_ci_high", "note",
]  # fmt: skip


def baseline_table(
    df: pd.DataFrame, values: pd.DataFrame, *, model_label: str | None = "Model", seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
) -> pd.DataFrame:  # fmt: skip
    """Tables 1-3 side by side: the model's score and each baseline against the same humans, same items.

    `df` is a batch_frame (its done items define the items; model_label=None leaves the model row out);
    `values` is cached_baselines for them. A baseline without any value is listed with n = 0 and a note.
    """
    done = df[(df["status"] == "done") & df["score"].notna()].set_index("item_id")
    hs, hl = _clean(done["human_score"]), _clean(done["human_label"])
    rows = []
    if model_label is not None:
        rows.append(_metric_row(model_label, _clean(done["score"]), hs, hl, seed=seed, n_boot=n_boot))
    v = values.reindex(done.index.astype(int))
    for metric, label in BASELINE_METRICS.items():
        col = v[metric] if metric in v else pd.Series(np.nan, index=v.index)
        x = _clean(col)
        if not np.isfinite(x).any():
            rows.append({"metric": label, "n": 0, "note": "Not computed yet."})
            continue
        row = _metric_row(label, x, hs, hl, seed=seed, n_boot=n_boot)
        missing = int((~np.isfinite(x)).sum())
        if missing:
            row["note"] = (row["note"] + f" {missing:,} item(s) not computed yet.").strip()
        rows.append(row)
    return pd.DataFrame(rows).reindex(columns=TABLE_COLUMNS)


def baselines(
    engine: Engine,
    dataset_id: int,
    item_ids: Sequence[int],
    *,
    with_embeddings: bool,
    df: pd.DataFrame | None = None,
    model_label: str | None = "Model",
    compute: bool = True,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
) -> pd.DataFrame:
    """Compute what is missing (when `compute`), then the Tables 1-3 frame for these items of the dataset.

    Without `df` (a batch_frame) there is no model row: the table compares the baselines only.
    """
    ids = [int(i) for i in item_ids]
    with engine.connect() as conn:
        rows = conn.execute(
            select(DatasetItem.id, DatasetItem.human_score, DatasetItem.human_label).where(
                DatasetItem.dataset_id == dataset_id, DatasetItem.id.in_(ids)
            )
        ).all()
    if len(rows) != len(set(ids)):
        raise InputError(f"Some items are not in dataset #{dataset_id}.")
    if compute:
        compute_baselines(engine, ids, with_embeddings=with_embeddings)
    values = cached_baselines(engine, ids)
    if df is None:
        df = pd.DataFrame(
            {"item_id": [r[0] for r in rows], "status": "done", "score": 0.0,
             "human_score": [r[1] for r in rows], "human_label": [r[2] for r in rows]}
        )  # fmt: skip
        return baseline_table(df, values, model_label=None, seed=seed, n_boot=n_boot)
    return baseline_table(df, values, model_label=model_label, seed=seed, n_boot=n_boot)


# -- RAI: Table 4 and Figure 4 ------------------------------------------------------------------------
def rai_table(df: pd.DataFrame) -> pd.DataFrame:
    """Table 4: items inconsistent at round 0 (score < 1), corrected by one RAI round (score 1 after it) and the
    consistency improvement rate = corrected / inconsistent. With more rounds, `corrected_after_m` and
    `rate_after_m` count the items consistent after the last round (Figure 4 follows them round by round)."""
    done = df[(df["status"] == "done") & df["score"].notna()]
    bad = done[done["score"] < CONSISTENT_AT]
    improved = bad[bad["n_rounds"] > 1]
    after_one = bad["score_r1"] if "score_r1" in bad else pd.Series(np.nan, index=bad.index)
    corrected = int((after_one >= CONSISTENT_AT).sum())
    corrected_m = int((bad["final_score"] >= CONSISTENT_AT).sum())
    return pd.DataFrame(
        [{
            "evaluated": len(done),
            "inconsistent": len(bad),
            "improved": len(improved),
            "corrected": corrected,
            "improvement_rate": corrected / len(bad) if len(bad) else None,
            "rounds_run": int(done["n_rounds"].max() - 1) if len(done) else 0,
            "corrected_after_m": corrected_m,
            "rate_after_m": corrected_m / len(bad) if len(bad) else None,
        }]
    )  # fmt: skip


@dataclass(frozen=True)
class RoundsResult:
    """Figure 4: the share of items fully consistent after each round, and every item's score per round."""

    share: pd.DataFrame  # round, n, consistent, share
    scores: pd.DataFrame  # round, item_id, score (an item that stopped keeps its last score)
    notes: tuple[str, ...] = ()


def rounds_of(df: pd.DataFrame) -> RoundsResult:
    """Per round r: each item's score after r rounds of RAI (carried forward once it stopped), and Figure 4's
    consistency improvement rate: the share of the items inconsistent at round 0 that are consistent after r."""
    done = df[(df["status"] == "done") & df["score"].notna()]
    cols = sorted((c for c in done.columns if c.startswith("score_r")), key=lambda c: int(c[7:]))
    if done.empty or not cols:
        empty = pd.DataFrame(columns=["round", "n", "consistent", "share"])
        return RoundsResult(empty, pd.DataFrame(columns=["round", "item_id", "score"]), ("No finished item yet.",))
    # An item stops when it is fully consistent or nothing changed: later rounds keep its last score.
    mat = done[cols].ffill(axis=1).to_numpy(dtype=float)
    n_rounds = mat.shape[1]
    bad = mat[mat[:, 0] < CONSISTENT_AT]  # the items Table 4 counts as inconsistent before any rewrite
    share = pd.DataFrame(
        {
            "round": np.arange(n_rounds),
            "n": np.full(n_rounds, len(bad)),
            "consistent": (bad >= CONSISTENT_AT).sum(axis=0),
        }
    )
    share["share"] = share["consistent"] / share["n"].where(share["n"] > 0)
    scores = pd.DataFrame(
        {
            "round": np.repeat(np.arange(n_rounds), len(done)),
            "item_id": np.tile(done["item_id"].astype(int).to_numpy(), n_rounds),
            "score": mat.T.reshape(-1),
        }
    )
    notes = []
    if n_rounds == 1:
        notes.append("No improvement round ran (rounds = 0, or every item was consistent at round 0).")
    return RoundsResult(share, scores[np.isfinite(scores["score"])].reset_index(drop=True), tuple(notes))


def rounds_table(
    engine: Engine | None = None, batch_id: int | None = None, *, data: BatchData | None = None
) -> RoundsResult:
    """Figure 4 for a batch: share fully consistent after each round and the per-round scores."""
    data = data or load_batch(engine, batch_id)  # type: ignore[arg-type]
    return rounds_of(data.items)


# -- human agreement ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class HumanAgreement:
    """Krippendorff's alpha (nominal) among the human raters, and between the model and the human majority."""

    among_humans: stats.AlphaResult | None
    n_items: int  # items with per-sentence votes
    n_sentences: int  # sentences with at least one vote
    n_workers: int  # distinct rater ids
    model_vs_majority: stats.AlphaResult | None
    notes: tuple[str, ...] = ()


def _alpha_among(votes: np.ndarray, n_workers: int, *, seed: int, n_boot: int) -> stats.AlphaResult:
    # Nominal alpha depends only on how many raters gave each value in each unit (the coincidences), never on
    # who they were: the matrix of rating slots x units gives exactly the value of workers x units, without a
    # mostly empty workers x units matrix (thousands of workers on large sets).
    res = stats.krippendorff_alpha(votes, "nominal", n_boot=n_boot, seed=seed)
    return replace(res, n_raters=n_workers)


def _vote_matrix(label_lists: Iterable[list[dict[str, int]] | None]) -> tuple[np.ndarray, int, int]:
    units: list[list[int]] = []
    workers: set[str] = set()
    n_items = 0
    for labels in label_lists:
        if not labels:
            continue
        n_items += 1
        for votes in labels:
            if votes:
                workers.update(votes)
                units.append([int(v) for v in votes.values()])
    slots = max((len(u) for u in units), default=0)
    m = np.full((slots, len(units)), np.nan)
    for j, u in enumerate(units):
        m[: len(u), j] = u
    return m, len(workers), n_items


def human_agreement(
    engine: Engine | None = None,
    *,
    batch_id: int | None = None,
    dataset_id: int | None = None,
    data: BatchData | None = None,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
) -> HumanAgreement:
    """Alpha among humans (units = sentences, raters = worker ids, nominal) over a batch's items or a whole
    dataset; with a batch, also alpha between the model's round-0 verdicts and the human majority (2 raters)."""
    notes: list[str] = []
    if data is None and batch_id is not None:
        data = load_batch(engine, batch_id)  # type: ignore[arg-type]
    if data is not None:
        data = _with_sentences(data)
        votes, n_workers, n_items = data.votes, data.n_workers, data.n_vote_items
    elif dataset_id is not None:
        with engine.connect() as conn:  # type: ignore[union-attr]
            q = select(DatasetItem.sentence_labels).where(DatasetItem.dataset_id == dataset_id)
            labels = conn.execute(q.order_by(DatasetItem.idx)).scalars()
            votes, n_workers, n_items = _vote_matrix(labels)
    else:
        raise ValueError("give batch_id, dataset_id or data")
    n_sentences = int(votes.shape[1])
    among = None
    if n_sentences == 0:
        notes.append(
            "This dataset has no per-sentence human labels (QAGS worker votes, or a sentence_labels column): "
            "no agreement among humans to compute."
        )
    else:
        among = _alpha_among(votes, n_workers, seed=seed, n_boot=n_boot)
        if votes.shape[0] < 2:
            notes.append("Each sentence has a single human label: agreement needs two or more raters per sentence.")
    vs = None
    if data is not None and n_sentences:
        s = data.sentences[data.sentences["n_votes"] > 0]
        if data.is_paragraph:
            notes.append("A paragraph-level batch has no sentence verdicts to compare with the human majority.")
        elif s.empty:
            notes.append("No finished sentence verdict to compare with the human majority yet.")
        else:
            model = s["verdict"].map({"consistent": 1.0, "inconsistent": 0.0}).astype(float).to_numpy()
            pair = np.vstack([model, s["human"].to_numpy()])
            vs = stats.krippendorff_alpha(pair, "nominal", n_boot=n_boot, seed=seed)
            n_out = int((~np.isfinite(model) | ~np.isfinite(s["human"].to_numpy())).sum())
            if n_out:
                notes.append(
                    f"Model vs human majority: {n_out:,} sentence(s) with an unknown verdict or tied human votes "
                    "are left out."
                )
    return HumanAgreement(among, n_items, n_sentences, n_workers, vs, tuple(notes))


def alpha_frame(h: HumanAgreement) -> pd.DataFrame:
    """The two alphas as table rows: who, alpha, 95% interval, units, raters, note."""
    rows = []
    for who, a, raters in (
        ("among the human raters", h.among_humans, "workers"),
        ("model vs human majority", h.model_vs_majority, "model, majority"),
    ):
        if a is None:
            continue
        rows.append(
            {"agreement": who, "alpha": a.alpha, "ci_low": a.ci_low, "ci_high": a.ci_high, "units": a.n_pairable,
             "raters": a.n_raters, "rater ids": raters, "level": a.level, "note": a.note or ""}
        )  # fmt: skip
    return pd.DataFrame(rows, columns=["agreement", "alpha", "ci_low", "ci_high", "units", "raters", "rater ids",
                                       "level", "note"])  # fmt: skip


# -- reproducibility bundle ----------------------------------------------------------------------------
def app_version() -> str:
    """The version in pyproject.toml."""
    try:
        with (PROJECT_ROOT / "pyproject.toml").open("rb") as f:
            return str(tomllib.load(f)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_record(role: str, prompt_id: str) -> dict[str, Any]:
    """A prompt id with the sha256 of its template (the rule converter has none: it is code)."""
    from services.prompts import nli as nli_prompts

    known = {p.id: p for p in (*prompts.ALL, *nli_prompts.ALL)}
    p = known.get(prompt_id)
    if role == "window":  # Sent-NLI / QG-QA record their window with their prompts
        return {"role": role, "id": prompt_id, "sha256": None, "source": "summary sentences per window (w)"}
    if p is not None:
        return {"role": role, "id": prompt_id, "sha256": _sha256(p.template), "source": p.source}
    if prompt_id.startswith("evidence@"):
        return {"role": role, "id": prompt_id, "sha256": None,
                "source": "offline evidence checker (services.dcr.evidence): no prompt, no model call"}  # fmt: skip
    if prompt_id.startswith("rule@"):
        return {"role": role, "id": prompt_id, "sha256": None,
                "source": "deterministic rule converter (services.dcr.rule_mark): no prompt"}  # fmt: skip
    return {"role": role, "id": prompt_id, "sha256": None, "source": "unknown to this version of the app"}


_public_url = redact_url  # the bundle's base URL: no credentials


def _public_params(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters without any whose name says it carries a credential."""
    return {k: v for k, v in params.items() if not is_secret_name(k)}


def _iso(dt: datetime | None) -> str | None:
    return dt.isoformat() if dt else None


def bundle(
    engine: Engine,
    batch_id: int,
    *,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
    threshold: float = DEFAULT_THRESHOLD,
) -> dict[str, Any]:
    """What it takes to reproduce a batch and its meta-evaluation. Never contains an API key."""
    from services.jobs.batches import progress

    p = progress(engine, batch_id)
    if p is None:
        raise InputError(f"Batch {batch_id} does not exist.")
    b = p.batch
    with Session(engine) as session:
        ds = session.get(Dataset, b.dataset_id)
        dataset = DatasetPublic.model_validate(ds) if ds else None
    return {
        "kind": "consistency-studio/reproducibility-bundle",
        "app": {"name": "Consistency Studio", "version": app_version()},
        "batch": {
            "id": b.id, "name": b.name, "status": b.status, "task": b.task, "criteria": b.criteria,
            "method": b.method, "method_label": METHOD_LABELS.get(b.method, b.method), "converter": b.amc,
            "max_rounds": b.max_rounds, "concurrency": b.concurrency, "item_limit": b.item_limit,
            "created_at": _iso(b.created_at), "started_at": _iso(b.started_at), "finished_at": _iso(b.finished_at),
        },
        "model": {
            "backend": b.backend_kind, "model": b.model, "base_url": _public_url(b.base_url),
            "params": _public_params(dict(b.params)),
        },
        "prompts": [prompt_record(role, pid) for role, pid in sorted(b.prompt_versions.items())],
        "seeds": {
            "bootstrap_seed": seed,
            "bootstrap_resamples": n_boot,
            "model_sampling": "no seed is sent to the model; temperature is in model.params, and every answer is "
            "cached by (model, prompt version, messages, parameters), so a re-run of the same batch "
            "reproduces the same verdicts from the cache",
        },
        "meta_evaluation": {"threshold": threshold, "positive_class": "consistent",
                            "consistent_when": "score == 1 (Table 4, Figure 3)"},  # fmt: skip
        "dataset": None if dataset is None else {
            "id": dataset.id, "name": dataset.name, "format": dataset.format, "task": dataset.task,
            "sha256": dataset.sha256, "n_items": dataset.n_items, "n_rejected": dataset.n_rejected,
            "label_kinds": list(dataset.label_kinds),
        },
        "counts": {
            "items": p.total, "done": p.done, "failed": p.failed, "pending": p.pending, "running": p.running,
            "calls": p.calls, "cache_hits": p.cache_hits, "tokens": p.tokens,
        },
    }  # fmt: skip


@dataclass(frozen=True)
class Estimates:
    """The parts of the report that carry bootstrap intervals (the slow part on large batches)."""

    correlations: Correlations
    agreement: HumanAgreement | None  # None when the data was loaded without sentences
    baselines: pd.DataFrame
    n_boot: int
    seed: int


def estimates(
    data: BatchData, baseline_values: pd.DataFrame | None = None, *, seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
) -> Estimates:  # fmt: skip
    """Correlations, AUROC, both alphas (when the data has its sentences) and the baselines table, with
    `n_boot` resamples (0: points only)."""
    values = baseline_values if baseline_values is not None else pd.DataFrame(columns=list(BASELINE_METRICS))
    return Estimates(
        correlations=correlations(data.done, seed=seed, n_boot=n_boot),
        agreement=human_agreement(data=data, seed=seed, n_boot=n_boot) if data.has_sentences else None,
        baselines=baseline_table(data.items, values, model_label=model_label(data.batch), seed=seed, n_boot=n_boot),
        n_boot=n_boot,
        seed=seed,
    )


def estimates_from_db(database_url: str, batch_id: int, *, seed: int = DEFAULT_SEED, n_boot: int = DEFAULT_BOOT
                      ) -> Estimates:  # fmt: skip
    """estimates() for a batch read from the database at this URL (for a child process: nothing to pickle
    but the URL and the numbers)."""
    from db.engine import make_engine

    engine = make_engine(database_url, migrate=False)
    try:
        data = load_batch(engine, batch_id)
        values = cached_baselines(engine, data.done["item_id"].astype(int).tolist())
        return estimates(data, values, seed=seed, n_boot=n_boot)
    finally:
        engine.dispose()


def bootstrap_seconds(data: BatchData, n_boot: int, n_baselines: int = 0) -> float:
    """A rough CPU time for the bootstrap intervals of a batch (measured: 10,000 items and 1,000 resamples take
    about 4 s per score column; 50,000 sentences about 3.5 s per alpha). Items-only data counts sentences."""
    items = len(data.done)
    if data.has_sentences:
        units = int(data.votes.shape[1]) + int((data.sentences["n_votes"] > 0).sum())
    else:
        units = 2 * int(data.items["n_sentences"].sum())
    return n_boot / 1000 * (items * 4e-4 * (1 + n_baselines) + units * 7e-5)


# -- the whole report ------------------------------------------------------------------------------------
def jsonable(obj: Any) -> Any:
    """Plain JSON values from dataclasses, DataFrames, numpy scalars; NaN and infinities become None."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return {k: jsonable(v) for k, v in asdict(obj).items()}
    if isinstance(obj, pd.DataFrame):
        return [jsonable(r) for r in obj.reset_index(drop=obj.index.name is None).to_dict(orient="records")]
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if obj is pd.NA or obj is pd.NaT:
        return None
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, datetime):
        return obj.isoformat()
    return obj


@dataclass(frozen=True)
class Report:
    """Every table of the meta-evaluation of one batch."""

    summary: SummaryLevel
    sentence: SentenceLevel
    figure3: Figure3
    baselines: pd.DataFrame
    rai: pd.DataFrame
    rounds: RoundsResult
    agreement: HumanAgreement
    notes: tuple[str, ...] = field(default_factory=tuple)


def build_report(
    data: BatchData,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
    baseline_values: pd.DataFrame | None = None,
    other: BatchData | None = None,
) -> Report:
    """Every table from loaded data (no database access)."""
    values = baseline_values if baseline_values is not None else pd.DataFrame(columns=list(BASELINE_METRICS))
    return Report(
        summary=summary_level(data.items, threshold=threshold, seed=seed, n_boot=n_boot),
        sentence=sentence_level(data=data),
        figure3=figure3(data=data, other=other),
        baselines=baseline_table(data.items, values, model_label=model_label(data.batch), seed=seed, n_boot=n_boot),
        rai=rai_table(data.items),
        rounds=rounds_of(data.items),
        agreement=human_agreement(data=data, seed=seed, n_boot=n_boot),
        notes=data.notes,
    )


def model_label(batch: BatchPublic) -> str:
    """How a batch is named in the baselines table: id, model, evaluator and converter."""
    if batch.method == "evidence":
        return f"Batch #{batch.id}: evidence checker (offline)"
    level = "paragraph" if batch.method == "paragraph" else "DCE"
    return f"Batch #{batch.id}: {batch.model or 'model'} ({level} + AMC {batch.amc})"


def report(
    engine: Engine,
    batch_id: int,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
    other_batch_id: int | None = None,
    compute_baselines_first: bool = False,
    with_embeddings: bool = False,
) -> dict[str, Any]:
    """The meta-evaluation of a batch as JSON-serialisable data, with the reproducibility bundle."""
    data = load_batch(engine, batch_id)
    other = load_batch(engine, other_batch_id) if other_batch_id is not None else None
    ids = data.done["item_id"].astype(int).tolist()
    if compute_baselines_first and ids:
        compute_baselines(engine, ids, with_embeddings=with_embeddings)
    rep = build_report(
        data, threshold=threshold, seed=seed, n_boot=n_boot, baseline_values=cached_baselines(engine, ids), other=other
    )
    settings = {"threshold": threshold, "seed": seed, "bootstrap_resamples": n_boot, "other_batch_id": other_batch_id}
    return report_dict(rep, batch_id=batch_id, settings=settings, bundle=bundle(engine, batch_id, seed=seed,
                       n_boot=n_boot, threshold=threshold))  # fmt: skip


def report_dict(rep: Report, *, batch_id: int, settings: dict[str, Any], bundle: dict[str, Any]) -> dict[str, Any]:
    """A Report as JSON-serialisable data (NaN as null), with the settings and the reproducibility bundle."""
    s = rep.summary
    h = rep.agreement
    return jsonable(
        {
            "batch_id": batch_id,
            "notes": list(rep.notes),
            "settings": {**settings, "positive_class": "consistent"},
            "summary_level": {
                "n_items": s.correlations.n_items,
                "correlations": s.correlations.frame(),
                "notes": list(s.correlations.notes),
                "classification": classification_frame(s.classification).iloc[0].to_dict(),
            },
            "sentence_level": {
                **{k: v for k, v in asdict(rep.sentence).items() if k != "classification"},
                "classification": asdict(rep.sentence.classification) if rep.sentence.classification else None,
            },
            "figure3": {"table": rep.figure3.frame, "notes": list(rep.figure3.notes)},
            "baselines": rep.baselines,
            "rai": {"table4": rep.rai, "rounds": rep.rounds.share, "notes": list(rep.rounds.notes)},
            "human_agreement": {
                "alpha": h.among_humans.alpha if h.among_humans else None,
                "n_sentences": h.among_humans.n_pairable if h.among_humans else 0,
                "n_items": h.n_items,
                "n_workers": h.n_workers,
                "ci_low": h.among_humans.ci_low if h.among_humans else None,
                "ci_high": h.among_humans.ci_high if h.among_humans else None,
                "among_humans": h.among_humans,
                "model_vs_majority": h.model_vs_majority,
                "notes": list(h.notes),
            },
            "bundle": bundle,
        }
    )


def report_json(rep: dict[str, Any]) -> str:
    """The report as indented JSON (strict: no NaN)."""
    return json.dumps(rep, indent=2, ensure_ascii=False, allow_nan=False)


# -- methods compared over one dataset (paper 003: Tables 4-5, Figure 2, cost) -------------------------
LENGTH_BUCKETS = 4
ERROR_TYPE_KEYS = ("error_type", "error_types", "category", "categories")


@dataclass(frozen=True)
class MethodComparison:
    """Batches of several methods over one dataset, side by side.

    `table`: one row per batch (balanced accuracy at the threshold, Pearson with the human score, cost per
    document); `repeats`: mean and standard deviation over repeated runs of one configuration (Table 4);
    `lengths`: accuracy by document- and summary-length bucket (Figure 2); `error_types`: recall of the
    inconsistent summaries of each error type, when the dataset's items carry types (Table 5).
    """

    table: pd.DataFrame
    repeats: pd.DataFrame
    lengths: pd.DataFrame
    error_types: pd.DataFrame
    notes: tuple[str, ...] = ()


def _error_types(extra: dict[str, Any] | None) -> list[str]:
    for key in ERROR_TYPE_KEYS:
        value = (extra or {}).get(key)
        if isinstance(value, str) and value.strip():
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, list):
            return [str(v).strip() for v in value if str(v).strip()]
    return []


def _method_items(engine: Engine, batch_id: int) -> pd.DataFrame:
    """A batch's items with their human judgments, lengths, error types and cost."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(
                BatchItem.item_id, BatchItem.status, BatchItem.score, DatasetItem.human_score,
                DatasetItem.human_label, Document.n_chars, DatasetItem.candidate, DatasetItem.extra,
                BatchItem.calls, BatchItem.prompt_tokens, BatchItem.completion_tokens, BatchItem.latency_ms,
                BatchItem.n_unknown,
            )
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .join(Document, Document.id == DatasetItem.reference_id)
            .where(BatchItem.batch_id == batch_id)
            .order_by(DatasetItem.idx)
        ).all()  # fmt: skip
    return pd.DataFrame(
        [
            {
                "item_id": r[0], "status": r[1], "score": r[2], "human_score": r[3], "human_label": r[4],
                "doc_words": round((r[5] or 0) / 5.5),  # characters to words, as English text averages
                "summary_words": len((r[6] or "").split()), "error_types": _error_types(r[7]),
                "calls": r[8] or 0, "tokens": (r[9] or 0) + (r[10] or 0), "seconds": (r[11] or 0.0) / 1000,
                "failed_units": r[12] or 0,
            }
            for r in rows
        ],
        columns=["item_id", "status", "score", "human_score", "human_label", "doc_words", "summary_words",
                 "error_types", "calls", "tokens", "seconds", "failed_units"],
    )  # fmt: skip


def _batch_label(b: BatchPublic, window: int, sample: int, grouped: bool) -> str:
    from services.nli import paradigms as nli

    name = {"dce-amc": "DCE-AMC", "paragraph": "Paragraph", "evidence": "Evidence checker", "summ-nli": "Summ-NLI",
            "sent-nli": "Sent-NLI", "qg-qa": "QG-QA"}.get(b.method, b.method)  # fmt: skip
    if b.method in nli.WINDOWED:
        name += f" (w={window})"
    return name + (f" · run {sample + 1}" if grouped else "")


def _buckets(values: pd.Series, n: int) -> pd.Series:
    """Equal-count buckets labelled by their word range ("120–340 words")."""
    if values.nunique() < 2:
        return pd.Series([f"{int(values.min())} words"] * len(values), index=values.index) if len(values) else values
    cut = pd.qcut(values, q=min(n, values.nunique()), duplicates="drop")
    return cut.map(lambda iv: f"{max(0, int(math.floor(iv.left)) + 1)}–{int(iv.right)} words").astype(str)


def compare_method_batches(
    engine: Engine,
    batch_ids: Sequence[int],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    n_buckets: int = LENGTH_BUCKETS,
) -> MethodComparison:
    """Balanced accuracy, Pearson, length buckets, error-type recall, repeat spread and cost of several batches.

    A score below `threshold` predicts "inconsistent" (the positive class); at 1.0, the default, a summary is
    inconsistent when any sentence, window or question is, as the paradigms' Eqs. 2 and 4 say.
    """
    from services.jobs import batches as batch_service

    with Session(engine) as session:
        found = {b.id: BatchPublic.model_validate(b) for b in session.execute(
            select(Batch).where(Batch.id.in_(list(batch_ids)))).scalars()}  # fmt: skip
    opts = batch_service.all_options(engine)
    groups = pd.Series([opts[b].repeat_group for b in found if b in opts and opts[b].repeat_group]).value_counts()
    rows, length_rows, type_rows, notes = [], [], [], []
    item_frames: dict[int, pd.DataFrame] = {}
    for bid in batch_ids:
        b = found.get(bid)
        if b is None:
            notes.append(f"Batch {bid} does not exist (deleted?); left out.")
            continue
        o = opts.get(bid)
        window, sample, group = (o.window, o.sample, o.repeat_group) if o else (1, 0, None)
        grouped = group is not None and groups.get(group, 0) > 1
        label = _batch_label(b, window, sample, grouped)
        items = _method_items(engine, bid)
        item_frames[bid] = items
        done = items[(items["status"] == "done") & items["score"].notna()]
        cls = at_threshold(done, threshold, positive=0) if len(done) else None  # 003: errors are what is found
        hs = done[done["human_score"].notna()]
        pear = stats.correlation(hs["score"].to_numpy(float), hs["human_score"].to_numpy(float), "pearson", n_boot=0)
        n_docs = max(1, len(items[items["status"].isin(("done", "failed"))]))
        rows.append(
            {
                "batch": bid, "method": label, "configuration": f"{b.method}|{window}|{b.amc}|{b.model}",
                "repeat_group": group, "n": len(done),
                "balanced_accuracy": cls.balanced_accuracy if cls else None, "recall": cls.recall if cls else None,
                "pearson": pear.r, "calls_per_doc": items["calls"].sum() / n_docs,
                "tokens_per_doc": items["tokens"].sum() / n_docs, "seconds_per_doc": items["seconds"].sum() / n_docs,
                "failed_units": int(items["failed_units"].sum()),
                "failed_items": int((items["status"] == "failed").sum()),
            }
        )  # fmt: skip
        labelled = done[done["human_label"].notna()].copy()
        if len(labelled):
            labelled["correct"] = (labelled["score"] >= threshold).astype(int) == labelled["human_label"].astype(int)
            for kind, col in (("document length", "doc_words"), ("summary length", "summary_words")):
                labelled["bucket"] = _buckets(labelled[col], n_buckets)
                labelled["order"] = labelled.groupby("bucket")[col].transform("min")
                for (bucket, order), g in labelled.groupby(["bucket", "order"], sort=False):
                    length_rows.append(
                        {"batch": bid, "method": label, "kind": kind, "bucket": bucket, "order": order,
                         "n": len(g), "accuracy": float(g["correct"].mean())}
                    )  # fmt: skip
            bad = labelled[labelled["human_label"] == 0]
            for etype in sorted({t for ts in bad["error_types"] for t in ts}):
                g = bad[bad["error_types"].map(lambda ts, e=etype: e in ts)]
                type_rows.append({"batch": bid, "method": label, "error_type": etype, "n": len(g),
                                  "recall": float((g["score"] < threshold).mean())})  # fmt: skip
    table = pd.DataFrame(rows, columns=[
        "batch", "method", "configuration", "repeat_group", "n", "balanced_accuracy", "recall", "pearson",
        "calls_per_doc", "tokens_per_doc", "seconds_per_doc", "failed_units", "failed_items"])  # fmt: skip
    repeats = _repeat_spread(table)
    lengths = pd.DataFrame(length_rows, columns=["batch", "method", "kind", "bucket", "order", "n", "accuracy"])
    if len(lengths):
        lengths = lengths.sort_values(["batch", "kind", "order"]).drop(columns="order").reset_index(drop=True)
    else:
        lengths = lengths.drop(columns="order")
    types = pd.DataFrame(type_rows, columns=["batch", "method", "error_type", "n", "recall"])
    if not len(types) and len(table):
        notes.append("The dataset's items carry no error types (an `error_type` field), so Table 5 is not shown.")
    return MethodComparison(table=table, repeats=repeats, lengths=lengths, error_types=types, notes=tuple(notes))


def _repeat_spread(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and sample standard deviation over the repeats of each configuration (Table 4's ±)."""
    cols = ["method", "runs", "balanced_accuracy_mean", "balanced_accuracy_std", "pearson_mean", "pearson_std",
            "calls_per_doc"]  # fmt: skip
    reps = table[table["repeat_group"].notna()]
    out = []
    for _group, g in reps.groupby("repeat_group", sort=False):
        if len(g) < 2:
            continue
        ba, pe = g["balanced_accuracy"].astype(float), g["pearson"].astype(float)
        out.append({
            "method": g["method"].iloc[0].rsplit(" · run ", 1)[0], "runs": len(g),
            "balanced_accuracy_mean": ba.mean(), "balanced_accuracy_std": ba.std(ddof=1),
            "pearson_mean": pe.mean(), "pearson_std": pe.std(ddof=1), "calls_per_doc": g["calls_per_doc"].mean(),
        })  # fmt: skip
    return pd.DataFrame(out, columns=cols)


def public_params(params: dict[str, Any]) -> dict[str, Any]:
    """Model parameters fit to show or export: none whose name says it carries a credential."""
    return _public_params(params)
