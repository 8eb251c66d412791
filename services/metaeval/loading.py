"""A batch's results and human judgments, read once from the database into frames (BatchData)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine
from sqlalchemy.pool import StaticPool
from sqlmodel import Session

from db import metaeval as db
from db.models import BatchPublic, DatasetPublic
from services import stats
from services.text import InputError


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
    loaded_at: datetime | None = None  # when load_batch began reading (UTC): the figures are as of then

    @property
    def done(self) -> pd.DataFrame:
        """Items with a round-0 score."""
        return self.items[(self.items["status"] == "done") & self.items["score"].notna()]

    @property
    def is_paragraph(self) -> bool:
        return self.batch.method == "paragraph"


def batch_stamp(engine: Engine, batch_id: int) -> str:
    """Changes whenever the batch's results change (status, items finished, last write): a cache key."""
    with Session(engine) as session:
        return db.batch_stamp(session=session, batch_id=batch_id)


class StampThrottle:
    """The stamp to key a batch's cached figures on, taken again at most every `every` seconds while the batch
    runs: each finished item changes batch_stamp, and recomputing a large batch's statistics on every rerun
    would keep a page busy for as long as the batch runs. A batch that is not running gets its current stamp
    (a finished batch's figures never change until it runs again). Safe across threads (one per server)."""

    def __init__(self, every: float, clock: Callable[[], float] = time.monotonic, max_batches: int = 64) -> None:
        self.every = every
        self._clock = clock
        self._max = max_batches
        self._seen: dict[int, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def stamp(self, engine: Engine, batch_id: int, *, running: bool) -> str:
        """The batch's stamp: while `running`, the one taken less than `every` seconds ago when there is one."""
        now = self._clock()
        with self._lock:
            seen = self._seen.get(batch_id)
        if running and seen is not None and now - seen[1] < self.every:
            return seen[0]
        current = batch_stamp(engine, batch_id)
        with self._lock:
            _remember(self._seen, batch_id, (current, now), self._max)
        return current


def _remember(store: dict, key: Any, value: Any, limit: int) -> None:
    """Put `value` under `key` as the newest entry of `store`, dropping the oldest beyond `limit`."""
    store.pop(key, None)
    store[key] = value
    while len(store) > limit:
        del store[next(iter(store))]


@dataclass
class _Raw:
    """What load_batch reads, before it becomes frames (the same from the SQL and the Python path)."""

    base: list[tuple]  # item_id, external_id, status, score, final_score, human_score, human_label, n_rounds,
    # n_sentences, n_unknown, model_is_consistent (round 0), n_label_entries; in dataset order
    rounds: list[tuple[int, int, float | None]]  # (item_id, round, score) for rounds between the first and last
    sentences: list[tuple[int, int, str]] | pd.DataFrame  # (item_id, index, verdict) at round 0 of done items
    votes: list[tuple[int, int, int, int]] | pd.DataFrame  # (item_id, sentence index, yes votes, votes), every item
    n_workers: int


def _json_rows(engine: Engine, query: db.JsonQuery, batch_id: int) -> list[tuple]:
    with Session(engine) as session:
        return db.sqlite_json_rows(session=session, query=query, batch_id=batch_id)


def _parallel(engine: Engine, batch_id: int, queries: Sequence[db.JsonQuery]) -> list[list[tuple]]:
    if isinstance(engine.pool, StaticPool) or len(queries) < 2:  # one shared connection (in-memory): in turn
        return [_json_rows(engine, q, batch_id) for q in queries]
    # sqlite3 lets go of the GIL while SQLite parses JSON: the queries run side by side on pooled connections.
    with ThreadPoolExecutor(max_workers=len(queries), thread_name_prefix="metaeval-sql") as pool:
        return list(pool.map(lambda q: _json_rows(engine, q, batch_id), queries))


def _read_sql_items(engine: Engine, batch_id: int) -> _Raw:
    with Session(engine) as session:
        plain = db.item_rows(session=session, batch_id=batch_id)
    extra, rounds = _parallel(engine, batch_id, ("flags", "rounds"))
    flags = {r[0]: (r[1], r[2]) for r in extra}
    base = []
    for r in plain:
        flag, n_labels = flags.get(r[0], (None, None))
        base.append((*r, None if flag is None else bool(flag), n_labels or 0))
    return _Raw(base, rounds, [], [], 0)


def _read_sql_sentences(engine: Engine, batch_id: int) -> _Raw:
    sents, letters, votes, workers = _parallel(engine, batch_id, ("sentences", "verdicts", "votes", "workers"))
    return _Raw([], [], _all_sentences(sents, letters), votes, int(workers[0][0] or 0) if workers else 0)


def _all_sentences(rows: list[tuple], letters: list[tuple]) -> pd.DataFrame:
    """The sentence verdicts read from the results (rows of the "sentences" query) and from the columns written
    with them (rows of the "verdicts" query: a letter per sentence, in order), as one frame (_sentences_frame)."""
    parsed = _sentences_frame(rows)
    if not letters:
        return parsed
    ids = np.array([r[0] for r in letters], dtype=np.int64)
    words = [r[1] or "" for r in letters]
    sizes = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
    flat = np.frombuffer("".join(words).encode("ascii", errors="replace"), dtype="S1")
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    codes = pd.Categorical.from_codes(
        np.select([flat == b"c", flat == b"i"], [0, 1], 2), categories=["consistent", "inconsistent", "unknown"]
    )
    stored = pd.DataFrame(
        {"item_id": np.repeat(ids, sizes), "idx": np.arange(len(flat), dtype=np.int64) - starts, "verdict": codes}
    )
    if parsed.empty:
        return stored
    both = pd.concat([parsed.astype({"verdict": object}), stored.astype({"verdict": object})], ignore_index=True)
    return both.astype({"verdict": "category"})


def _read_python(engine: Engine, batch_id: int) -> _Raw:
    with Session(engine) as session:
        rows = db.item_result_rows(session=session, batch_id=batch_id)
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
    later). On SQLite and PostgreSQL the JSON results are taken apart by the database (sql_json=None picks that
    by dialect); elsewhere in Python. Both give the same data.
    """
    started = datetime.now(UTC)
    with Session(engine) as session:
        found = db.batch_with_dataset(session=session, batch_id=batch_id)
    if found is None:
        raise InputError(f"Batch {batch_id} does not exist.")
    batch, dataset = found
    if not _use_sql(engine, sql_json):
        raw = _read_python(engine, batch_id)
        data = _with_documents(engine, batch_id, _assemble_items(batch, dataset, raw, started))
        return _assemble_sentences(data, raw) if sentences else data
    items = _assemble_items(batch, dataset, _read_sql_items(engine, batch_id), started)
    data = _with_documents(engine, batch_id, items)
    return add_sentences(engine, data, sql_json=True) if sentences else data


class RunningBatches:
    """Reads of running batches, each from the one before: only the items updated since are read again.

    While a batch runs its page reads it again every so often (StampThrottle), and a whole read grows with the
    batch: at 100,000 items about 2.5 s of the app's CPU on SQLite, and the database's as much again on
    PostgreSQL. Finished items do not change until they are run again, and every write to an item sets its
    updated_at (db/batches.py), so a read of a running batch takes the last read's items and replaces those
    updated since its newest finish, less MARGIN for writes that commit late. The unfinished items' pending or
    running comes from the running ones, read each time (a dead worker's items go back to pending without a
    new updated_at).

    Every such read is checked: the finished items it ends with must be as many as the database counts in the
    same statement as the changes. When they are not (a write that committed more than MARGIN late, an item
    set back by hand), or the batch is another (deleted, its id taken again), the batch is read whole. So a read
    gives what load_batch(sentences=False) gives at that moment (tests/services/test_metaeval_running.py). A
    batch that is not running is always read whole, and forgotten. Safe across threads; keeps the last read of
    at most `max_batches` batches, in the server's memory (11 MB at 100,000 items)."""

    MARGIN = timedelta(seconds=15)

    def __init__(self, max_batches: int = 8) -> None:
        self._max = max_batches
        self._last: dict[tuple[str, int], _Last] = {}
        self._lock = threading.Lock()
        # reads of each kind (and failed checks); "sentences whole" and "sentences changes" for with_sentences
        self.counts = dict.fromkeys(("whole", "changes", "mismatch", "sentences whole", "sentences changes"), 0)

    def load(self, engine: Engine, batch_id: int) -> BatchData:
        """The batch's items (as load_batch with sentences=False); InputError for an unknown id."""
        key = (engine.url.render_as_string(hide_password=True), batch_id)
        started = datetime.now(UTC)
        with Session(engine) as session:
            found = db.batch_with_dataset(session=session, batch_id=batch_id)
        if found is None:
            self._forget(key)
            raise InputError(f"Batch {batch_id} does not exist.")
        batch, dataset = found
        if batch.status not in ("queued", "running") or not _use_sql(engine, None):
            self._forget(key)
            return load_batch(engine, batch_id, sentences=False)
        with self._lock:
            last = self._last.get(key)
        data, same = None, last is not None and _same_batch(last.data.batch, batch)
        if last is not None and same:
            with Session(engine) as session:
                running = db.running_item_ids(session=session, batch_id=batch_id)
                n, newest, changed, rounds = db.changes_since(session=session, batch_id=batch_id, since=last.since)
            data = _apply_changes(last.data, batch, dataset, changed, rounds, running, started)
            if data is not None and int(data.items["status"].isin(("done", "failed")).sum()) != n:
                data = None
            self._count("changes" if data is not None else "mismatch")
            since = newest - self.MARGIN if newest is not None else last.since
            if data is not None:  # the sentences read so far stay, with the items to read again
                state = replace(last, data=data, since=since, dirty=last.dirty | {int(r[0]) for r in changed})
        if data is None:
            with Session(engine) as session:
                _n, newest = db.finished_summary(session=session, batch_id=batch_id)
            data = load_batch(engine, batch_id, sentences=False)
            self._count("whole")
            since = newest - self.MARGIN if newest is not None else _EPOCH
            kept = last if last is not None and same else None  # the votes never change: kept
            state = _Last(data, since, votes=kept.votes if kept else None, n_workers=kept.n_workers if kept else 0)
        with self._lock:
            _remember(self._last, key, state, self._max)
        return data

    def with_sentences(self, engine: Engine, data: BatchData) -> BatchData:
        """`data` (items from `load`) with its sentence verdicts and human votes, as add_sentences gives them.

        For the batch's latest read by `load`, only the sentences of the items it changed since the sentences
        were last read are read again; the human votes of a batch's items never change and are read once. The
        items read again must be the ones `data` has done, or the sentences are read whole. Any other data is
        read whole (add_sentences)."""
        if data.has_sentences:
            return data
        key = (engine.url.render_as_string(hide_password=True), data.batch.id)
        with self._lock:
            last = self._last.get(key)
        if last is None or last.data.loaded_at != data.loaded_at or not _use_sql(engine, None):
            return add_sentences(engine, data)
        votes, n_workers, sentences = last.votes, last.n_workers, last.sentences
        if votes is None:
            v, w = _parallel(engine, data.batch.id, ("votes", "workers"))
            votes, n_workers = _votes_frame(v), int(w[0][0] or 0) if w else 0
        done = data.items.loc[data.items["status"] == "done", "item_id"].to_numpy()
        if sentences is not None and last.dirty:
            with Session(engine) as session:
                rows = db.sentences_of(session=session, batch_id=data.batch.id, item_ids=sorted(last.dirty))
            if {int(r[0]) for r in rows} == last.dirty & {int(i) for i in done}:
                new = _sentences_frame([r for r in rows if r[1] is not None])
                sentences = pd.concat(
                    [sentences[~sentences["item_id"].isin(last.dirty)], new], ignore_index=True
                ).astype({"verdict": "category"})
                self._count("sentences changes")
            else:
                sentences = None
        if sentences is None:
            sentences = _all_sentences(*_parallel(engine, data.batch.id, ("sentences", "verdicts")))
            self._count("sentences whole")
        with self._lock:
            if self._last.get(key) is last:  # no newer read meanwhile
                self._last[key] = replace(last, sentences=sentences, votes=votes, n_workers=n_workers, dirty=set())
        return _assemble_sentences(data, _Raw([], [], sentences, votes, n_workers))

    def _forget(self, key: tuple[str, int]) -> None:
        with self._lock:
            self._last.pop(key, None)

    def _count(self, kind: str) -> None:
        with self._lock:
            self.counts[kind] += 1


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class _Last:
    """RunningBatches' last read of a batch: its items, where the next read starts, and the sentences read so
    far (None: not yet) with the items changed since (`dirty`), and the human votes (read once)."""

    data: BatchData
    since: datetime
    sentences: pd.DataFrame | None = None  # item_id, idx, verdict of the done items' round 0
    dirty: frozenset[int] | set[int] = frozenset()
    votes: pd.DataFrame | None = None  # item_id, idx, yes, total
    n_workers: int = 0


def _same_batch(a: BatchPublic, b: BatchPublic) -> bool:
    return (a.id, a.created_at, a.dataset_id, a.n_items) == (b.id, b.created_at, b.dataset_id, b.n_items)


_CHANGED = ["item_id", "status", "score", "final_score", "n_rounds", "n_sentences", "n_unknown", "flag"]


def _apply_changes(
    last: BatchData,
    batch: BatchPublic,
    dataset: DatasetPublic | None,
    changed: list[tuple],
    rounds: list[tuple],
    running: list[int],
    loaded_at: datetime,
) -> BatchData | None:
    """`last` with these items' new values (db.changes_since) and the running ones; None when an item is not
    among the last read's (the batch's items changed: read it whole)."""
    items = last.items
    index = pd.Index(items["item_id"].to_numpy())
    status = items["status"].to_numpy(dtype=object).copy()
    finished = np.isin(status, ("done", "failed"))
    status[~finished] = "pending"
    run_pos = index.get_indexer(np.asarray(running, dtype=np.int64))
    if (run_pos < 0).any():
        return None
    status[run_pos[~finished[run_pos]]] = "running"
    cols = {c: items[c].to_numpy(copy=True) for c in ("score", "final_score", "n_rounds", "n_sentences", "n_unknown")}
    flag = items["model_is_consistent"].array.copy()
    round_cols = [c for c in items.columns if c.startswith("score_r")]
    n = len(items)
    pos = np.zeros(0, dtype=np.int64)
    if changed:
        ch = pd.DataFrame(changed, columns=_CHANGED)
        pos = index.get_indexer(ch["item_id"].to_numpy(dtype=np.int64))
        if (pos < 0).any():
            return None
        status[pos] = ch["status"].astype(str).to_numpy(dtype=object)
        for c in ("score", "final_score"):
            cols[c][pos] = pd.to_numeric(ch[c], errors="coerce").to_numpy(dtype=float)
        for c in ("n_rounds", "n_sentences", "n_unknown"):
            cols[c][pos] = ch[c].fillna(0).to_numpy(dtype=np.int64)
        flag[pos] = pd.array(
            [None if pd.isna(f) else bool(f) for f in ch["flag"].to_numpy(dtype=object)], dtype="boolean"
        )
    n_rounds = cols["n_rounds"]
    max_rounds = int(n_rounds.max()) if n else 0
    mat = np.full((n, max(max_rounds, 1)), np.nan)
    keep = min(len(round_cols), max_rounds)
    if keep:
        mat[:, :keep] = items[round_cols[:keep]].to_numpy(dtype=float)
    if len(pos):
        mat[pos, :] = np.nan
        sub = n_rounds[pos]
        has = sub >= 1
        mat[pos[has], 0] = cols["score"][pos[has]]
        mat[pos[has], sub[has] - 1] = cols["final_score"][pos[has]]
        if rounds:
            r = pd.DataFrame(rounds, columns=["item_id", "round", "score"])
            mine = r["item_id"].isin(set(int(i) for i in items["item_id"].to_numpy()[pos]))
            r = r[mine]
            mat[index.get_indexer(r["item_id"].to_numpy(dtype=np.int64)), r["round"].to_numpy(dtype=int)] = (
                pd.to_numeric(r["score"]).to_numpy(dtype=float)
            )
    out = items.drop(columns=[*round_cols, "document_id"]).assign(
        status=pd.Series(status, index=items.index).astype(str),
        model_is_consistent=flag,
        **cols,
    )
    for k in range(max_rounds):
        out[f"score_r{k}"] = mat[:, k]
    out["document_id"] = items["document_id"]
    return replace(last, batch=batch, dataset=dataset, items=out, notes=_status_notes(batch, out), loaded_at=loaded_at)


def _with_documents(engine: Engine, batch_id: int, data: BatchData) -> BatchData:
    """Each item's reference document id: summaries of one document are grouped for Table 2's correlation."""
    with Session(engine) as session:
        docs = db.reference_ids(session=session, batch_id=batch_id)
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
    return db.has_json_queries(engine.dialect.name) if sql_json is None else sql_json


def _frame(rows: list[tuple], columns: list[str], dtype: str | None) -> pd.DataFrame:
    """A frame from row tuples via one 2-D object array: no per-column tuples, whose allocation can set off
    a full garbage collection of the whole server heap (a quarter of a second at 50,000 rows)."""
    if not rows:
        return pd.DataFrame({c: np.asarray([], dtype=dtype or object) for c in columns})
    arr = np.array(rows, dtype=object).reshape(len(rows), len(columns))
    return pd.DataFrame({c: arr[:, k].astype(dtype) if dtype else arr[:, k] for k, c in enumerate(columns)})


def _assemble_items(
    batch: BatchPublic, dataset: DatasetPublic | None, raw: _Raw, loaded_at: datetime | None = None
) -> BatchData:
    cols = [
        "item_id",
        "external_id",
        "status",
        "score",
        "final_score",
        "human_score",
        "human_label",
        "n_rounds",
        "n_sentences",
        "n_unknown",
        "model_is_consistent",
        "n_labels",
    ]
    base = pd.DataFrame(raw.base, columns=cols)
    n = len(base)
    items = pd.DataFrame(
        {
            "item_id": base["item_id"].astype("int64"),
            "external_id": base["external_id"].astype(str),
            "status": base["status"].astype(str),
            **{
                c: pd.to_numeric(base[c], errors="coerce").astype(float)
                for c in ("score", "final_score", "human_score", "human_label")
            },
            "model_is_consistent": pd.array(base["model_is_consistent"].tolist(), dtype="boolean"),
            **{c: base[c].fillna(0).astype("int64") for c in ("n_rounds", "n_sentences", "n_unknown")},
        }
    )
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
    return BatchData(
        batch=batch,
        dataset=dataset,
        items=items,
        sentences=_EMPTY_SENTENCES,
        votes=np.zeros((0, 0)),
        n_workers=0,
        n_vote_items=0,
        n_misaligned=0,
        notes=_status_notes(batch, items),
        has_sentences=False,
        label_counts=base["n_labels"].fillna(0).astype("int64").to_numpy(),
        loaded_at=loaded_at,
    )


def _status_notes(batch: BatchPublic, items: pd.DataFrame) -> tuple[str, ...]:
    notes = []
    if batch.status in ("queued", "running"):
        finished = int(items["status"].isin(("done", "failed")).sum())
        notes.append(
            f"Batch #{batch.id} is still {batch.status}: {finished:,} of {len(items):,} items finished. These "
            "figures cover the finished items only and will change."
        )
    elif batch.status == "cancelled":
        notes.append(f"Batch #{batch.id} was cancelled: the figures cover the items it finished.")
    n_failed = int((items["status"] == "failed").sum())
    if n_failed:
        notes.append(f"{n_failed:,} item(s) failed and are left out (re-run them on the Batches page).")
    return tuple(notes)


_EMPTY_SENTENCES = pd.DataFrame(
    {
        "item_id": np.zeros(0, np.int64),
        "idx": np.zeros(0, np.int64),
        "verdict": np.zeros(0, object),
        "human": np.zeros(0),
        "n_votes": np.zeros(0, np.int64),
    }
)


def _votes_frame(rows: list[tuple]) -> pd.DataFrame:
    return _frame(rows, ["item_id", "idx", "yes", "total"], "int64")


def _sentences_frame(rows: list[tuple]) -> pd.DataFrame:
    """item_id, idx, verdict (a category: three values over hundreds of thousands of rows)."""
    sent = _frame(rows, ["item_id", "idx", "verdict"], None)
    return sent.astype({"item_id": "int64", "idx": "int64", "verdict": "category"})


def _assemble_sentences(data: BatchData, raw: _Raw) -> BatchData:
    items = data.items
    # Human votes per sentence: yes / total gives the majority (a tie has none) and, for alpha, the values.
    votes = raw.votes if isinstance(raw.votes, pd.DataFrame) else _votes_frame(raw.votes)
    sent = raw.sentences if isinstance(raw.sentences, pd.DataFrame) else _sentences_frame(raw.sentences)
    sent = sent.assign(verdict=sent["verdict"].astype(object).fillna("unknown").astype(str))
    # in the items' order, each item's sentences by index: the same rows whichever way they were read
    at = pd.Index(items["item_id"].to_numpy()).get_indexer(sent["item_id"].to_numpy())
    sent = sent.iloc[np.lexsort((sent["idx"].to_numpy(), at))].reset_index(drop=True)
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
    vote_matrix = stats.binary_slot_matrix(votes["yes"].to_numpy(), votes["total"].to_numpy())
    return replace(
        data,
        sentences=sent[["item_id", "idx", "verdict", "human", "n_votes"]].reset_index(drop=True),
        votes=vote_matrix,
        n_workers=raw.n_workers,
        n_vote_items=int(votes["item_id"].nunique()),
        n_misaligned=misaligned,
        has_sentences=True,
    )


def with_sentences(data: BatchData) -> BatchData:
    if not data.has_sentences:
        raise ValueError("this needs the sentences: load the batch with sentences=True")
    return data


def batch_frame(engine: Engine, batch_id: int) -> pd.DataFrame:
    """One row per item: ids, status, score, final_score, human_score, human_label, model_is_consistent
    (round 0), n_rounds and the score of each round (score_r0, score_r1, ...)."""
    return load_batch(engine, batch_id, sentences=False).items
