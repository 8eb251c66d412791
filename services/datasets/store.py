"""Storing datasets and reading them back: import once per file (by hash), list, stats, items, delete."""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import pickle
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, NamedTuple

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from db import datasets as db_datasets
from db.documents import get_or_create_documents
from db.engine import get_session
from db.models import Dataset, DatasetPublic
from services import tables
from services.datasets.items import (
    IMPORT_ADVICE,
    LABEL_KINDS,
    MAX_STORED_REJECTED,
    ColumnMapping,
    ImportedItem,
    ImportResult,
    ImportSummary,
    RejectedRow,
    has_kind,
    majority_vote,
)
from services.datasets.readers import Reading, no_valid_row, open_dataset, scan
from services.errors import InputError
from services.text import split_sentences

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

CHUNK_ROWS = 1000  # items read, checked, split and written at a time: an import holds one chunk, whatever the file


class SavedDataset(NamedTuple):
    """The dataset's id, and whether this call created it (False: the same file was imported before)."""

    id: int
    created: bool


# -- storing and reading datasets --------------------------------------------------------------
# An import reads the file twice, a chunk at a time, and holds neither it nor its items whole: once for its
# SHA-256 (a file imported before is found by it and not read again), then a chunk of rows at a time, each
# row checked, its candidate split into sentences, the chunk written to a temporary file. Only when the whole
# file has been read, and has given at least one item, is the dataset stored, in one transaction, a chunk of
# items at a time: a refused file (bad rows only, a header that does not fit) or a failure while storing
# leaves nothing behind, and a SQLite database is locked for the writing alone, not for the reading.
Source = bytes | BinaryIO | Path


def file_sha256(data: bytes | BinaryIO) -> str:
    """The SHA-256 of a file's bytes, or of a binary stream read in chunks (an upload is not copied)."""
    if isinstance(data, bytes | bytearray | memoryview):
        return hashlib.sha256(data).hexdigest()
    data.seek(0)
    digest = hashlib.file_digest(data, "sha256").hexdigest()
    data.seek(0)
    return digest


def find_existing(engine: Engine, data: bytes | BinaryIO, fmt: str) -> DatasetPublic | None:
    """The dataset already imported from these bytes in this format, if any."""
    return _find(engine, file_sha256(data), fmt)


def _find(engine: Engine, digest: str, fmt: str) -> DatasetPublic | None:
    with get_session(engine) as session:
        return db_datasets.find_dataset(session=session, sha256=digest, format=fmt)


class SpooledUpload(NamedTuple):
    """An upload copied to a file of its own (spool_upload): where, under which name, its SHA-256 and size."""

    path: Path
    name: str
    sha256: str
    size: int


def spool_upload(stream: BinaryIO, name: str, directory: Path) -> SpooledUpload:
    """Copy an upload (the uploader's file object) to a new file in `directory` a chunk at a time, hashing it
    on the way: the one read of its bytes. The page reads that file from then on (its first rows for the
    preview, the whole for the import) and needs the uploader's bytes no more. InputError when it is over the
    upload limit (nothing is kept then)."""
    tables.check_stream(stream, name, IMPORT_ADVICE)
    directory.mkdir(parents=True, exist_ok=True)
    digest, size, limit = hashlib.sha256(), 0, tables.upload_limit_mb() * tables.MB
    fd, raw = tempfile.mkstemp(prefix="upload-", suffix=Path(name).suffix[:16], dir=directory)
    path = Path(raw)
    try:
        with open(fd, "wb") as out:
            stream.seek(0)
            while chunk := stream.read(tables.MB):
                digest.update(chunk)
                size += len(chunk)
                if size > limit:
                    raise tables.too_big(name, size, IMPORT_ADVICE)
                out.write(chunk)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    finally:
        stream.seek(0)
    return SpooledUpload(path, name, digest.hexdigest(), size)


def find_imported(engine: Engine, sha256: str, fmt: str) -> DatasetPublic | None:
    """The dataset already imported from a file with this SHA-256 in this format, if any."""
    return _find(engine, sha256, fmt)


# One item as it is spooled and stored: external_id, reference, candidate, sentences, human_score, human_label,
# sentence_labels, extra, system.
_Row = tuple[Any, ...]


def _row(it: ImportedItem) -> _Row:
    sentences = it.sentences if it.sentences is not None else split_sentences(it.candidate)
    return (
        it.external_id,
        it.reference,
        it.candidate,
        sentences,
        it.human_score,
        it.human_label,
        it.sentence_labels,
        it.extra,
        it.system,
    )


def save_dataset(engine: Engine, *, name: str, data: bytes, result: ImportResult) -> SavedDataset:
    """Store a dataset read whole and its items in one transaction; a file imported before in this format is not
    re-imported."""
    items = result.items
    rows = [_row(it) for it in items]
    summary = ImportSummary(
        format=result.format,
        task=result.task,
        n_items=len(items),
        n_rejected=len(result.rejected),
        rejected=result.rejected[:MAX_STORED_REJECTED],
        label_kinds=list(result.label_kinds),
        meta=result.meta,
    )
    counts = {k: sum(has_kind(it, k) for it in items) for k in LABEL_KINDS}
    meta = {**result.meta, "label_counts": counts, "n_sentences": sum(len(r[3]) for r in rows)}
    chunks = lambda: (rows[i : i + CHUNK_ROWS] for i in range(0, len(rows), CHUNK_ROWS))  # noqa: E731
    return _store(engine, name=name, digest=file_sha256(data), summary=summary, meta=meta, chunks=chunks)


def import_file(
    engine: Engine,
    *,
    name: str,
    data: Source,
    fmt: str,
    mapping: ColumnMapping | None = None,
    task: str = "summarization",
) -> tuple[SavedDataset, ImportSummary | None]:
    """Read and save a file a chunk at a time: its bytes, a binary stream (an upload's file object, read where
    it is) or a path (read from disk). A file imported before is neither read nor saved again (summary None).

    Refusals (over the size limit, empty, not UTF-8, a header that does not fit, no valid row) come before
    anything is stored."""
    with _opened(data, name) as stream:
        digest = tables.stream_digest(stream, name, IMPORT_ADVICE)
        existing = _find(engine, digest, fmt)
        if existing is not None:
            return SavedDataset(existing.id, False), None
        reading = open_dataset(stream, fmt, mapping, task=task)
        with tempfile.TemporaryFile() as spool:
            summary, meta = _spool(reading, spool)
            saved = _store(engine, name=name, digest=digest, summary=summary, meta=meta, chunks=lambda: _unspool(spool))
    return saved, summary


@contextlib.contextmanager
def _opened(data: Source, name: str) -> Iterator[BinaryIO]:
    """The source as a seekable binary stream, its size checked against the limit before anything is read."""
    if isinstance(data, Path):
        tables.check_path(data, IMPORT_ADVICE)
        with data.open("rb") as f:
            yield f
        return
    stream: BinaryIO = io.BytesIO(data) if isinstance(data, bytes) else data  # BytesIO shares the bytes
    tables.check_stream(stream, name, IMPORT_ADVICE)
    try:
        yield stream
    finally:
        stream.seek(0)


def _spool(reading: Reading, spool: IO[bytes]) -> tuple[ImportSummary, dict[str, Any]]:
    """Read every row, writing the items to `spool` a chunk at a time; what was read, and the dataset's meta.
    InputError when no row gave an item."""
    chunk_rows = CHUNK_ROWS
    n_items = n_rejected = n_sentences = 0
    rejected: list[RejectedRow] = []
    counts = dict.fromkeys(LABEL_KINDS, 0)
    chunk: list[_Row] = []
    for got in scan(reading):
        if isinstance(got, RejectedRow):  # kept, all of them, for the page and the CLI to list (a row number
            n_rejected += 1  # and a reason each); the dataset stores the first MAX_STORED_REJECTED
            rejected.append(got)
            continue
        n_items += 1
        for k in LABEL_KINDS:
            counts[k] += has_kind(got, k)
        row = _row(got)
        n_sentences += len(row[3])
        chunk.append(row)
        if len(chunk) >= chunk_rows:
            _write_chunk(spool, chunk)
            chunk = []
    if not n_items:
        raise no_valid_row(n_rejected, rejected)
    if chunk:
        _write_chunk(spool, chunk)
    summary = ImportSummary(
        format=reading.format,
        task=reading.task,
        n_items=n_items,
        n_rejected=n_rejected,
        rejected=rejected,
        label_kinds=[k for k in LABEL_KINDS if counts[k]],
        meta=reading.meta,
    )
    return summary, {**reading.meta, "label_counts": counts, "n_sentences": n_sentences}


def _write_chunk(spool: IO[bytes], rows: list[_Row]) -> None:
    pickle.dump(rows, spool, protocol=pickle.HIGHEST_PROTOCOL)


def _unspool(spool: IO[bytes]) -> Iterator[list[_Row]]:
    """The chunks written to the spool (our own temporary file), in order."""
    spool.seek(0)
    while True:
        try:
            yield pickle.load(spool)
        except EOFError:
            return


def _store(
    engine: Engine,
    *,
    name: str,
    digest: str,
    summary: ImportSummary,
    meta: dict[str, Any],
    chunks: Callable[[], Iterable[list[_Row]]],
) -> SavedDataset:
    """Store the dataset and its items, given a chunk at a time, in one transaction; retried once after a
    document inserted meanwhile by another writer."""
    for attempt in range(2):
        try:
            return _store_once(engine, name=name, digest=digest, summary=summary, meta=meta, chunks=chunks())
        except IntegrityError:  # a document inserted meanwhile by another writer: the retry finds it
            if attempt:
                raise
            log.info("retrying the import of %s after a concurrent document insert", name)
    raise AssertionError("unreachable")


def _store_once(
    engine: Engine,
    *,
    name: str,
    digest: str,
    summary: ImportSummary,
    meta: dict[str, Any],
    chunks: Iterable[list[_Row]],
) -> SavedDataset:
    with get_session(engine) as session:
        existing = db_datasets.find_dataset(session=session, sha256=digest, format=summary.format)
        if existing is not None:
            return SavedDataset(existing.id, False)
        dataset_id = db_datasets.add_dataset(
            session=session,
            data=Dataset(
                name=(name.strip() or "dataset")[:200],
                format=summary.format,
                task=summary.task,
                sha256=digest,
                label_kinds=list(summary.label_kinds),
                meta=meta,
                n_items=summary.n_items,
                n_rejected=summary.n_rejected,
                rejected=[{"row": r.row, "reason": r.reason} for r in summary.rejected[:MAX_STORED_REJECTED]],
            ),
        )
        idx = 0
        for rows in chunks:
            ref_ids = get_or_create_documents(session=session, texts=[r[1] for r in rows])
            db_datasets.add_dataset_items(
                session=session,
                rows=[
                    {
                        "dataset_id": dataset_id,
                        "idx": idx + i,
                        "external_id": r[0],
                        "reference_id": ref_id,
                        "candidate": r[2],
                        "sentences": r[3],
                        "human_score": r[4],
                        "human_label": r[5],
                        "sentence_labels": r[6],
                        "extra": r[7],
                        "system": r[8],
                    }
                    for i, (r, ref_id) in enumerate(zip(rows, ref_ids, strict=True))
                ],
            )
            idx += len(rows)
        n_references = db_datasets.reference_count(session=session, dataset_id=dataset_id)
        db_datasets.set_meta(session=session, dataset_id=dataset_id, meta={**meta, "n_references": n_references})
    log.info("imported dataset %s (%s): %d items, %d rejected", dataset_id, summary.format, idx, summary.n_rejected)
    return SavedDataset(dataset_id, True)


def list_datasets(engine: Engine) -> list[DatasetPublic]:
    """Every saved dataset, newest first."""
    with get_session(engine) as session:
        return db_datasets.list_datasets(session=session)


def get_dataset(engine: Engine, dataset_id: int) -> DatasetPublic | None:
    with get_session(engine) as session:
        ds = db_datasets.get_dataset(session=session, dataset_id=dataset_id)
        return DatasetPublic.model_validate(ds) if ds else None


def rejected_rows(engine: Engine, dataset_id: int) -> list[RejectedRow]:
    """The rejected rows stored with a dataset (the first MAX_STORED_REJECTED of them)."""
    with get_session(engine) as session:
        ds = db_datasets.get_dataset(session=session, dataset_id=dataset_id)
        return [RejectedRow(int(r["row"]), str(r["reason"])) for r in ds.rejected] if ds else []


def dataset_items_frame(engine: Engine, dataset_id: int, limit: int | None = None) -> pd.DataFrame:
    """A dataset's items in import order: id, external_id, candidate, n_sentences, human_score, human_label."""
    import pandas as pd  # only here: a command-line import need not wait for pandas

    with get_session(engine) as session:
        rows = db_datasets.dataset_item_rows(session=session, dataset_id=dataset_id, limit=limit)
    df = pd.DataFrame(
        {
            "id": [r[0] for r in rows],
            "external_id": [r[1] for r in rows],
            "candidate": [r[2] for r in rows],
            "n_sentences": [len(r[3] or []) for r in rows],
            "human_score": pd.array([r[4] for r in rows], dtype="Float64"),
            "human_label": pd.array([r[5] for r in rows], dtype="Int64"),
        }
    )
    return df


def system_counts(engine: Engine, dataset_id: int) -> dict[str, int]:
    """Items per system (prompt, model, version) of the dataset; empty when no system column was imported."""
    with get_session(engine) as session:
        return db_datasets.system_counts(session=session, dataset_id=dataset_id)


def delete_dataset(engine: Engine, dataset_id: int) -> bool:
    """Delete a dataset and its items; refuses (InputError) while a batch uses it."""
    with get_session(engine) as session:
        n = db_datasets.count_batches_for_dataset(session=session, dataset_id=dataset_id)
        if n:
            raise InputError(
                f"Dataset #{dataset_id} is used by {n} batch run(s). Delete those batches first; "
                "their results refer to the dataset's items."
            )
        return db_datasets.delete_dataset(session=session, dataset_id=dataset_id)


def _label_totals(session: Any, dataset_id: int) -> tuple[int, int]:
    """(labelled sentences, those with a consistent majority), streamed and counted here."""
    n_labelled = n_consistent = 0
    for labels in db_datasets.sentence_label_lists(session=session, dataset_id=dataset_id):
        for v in labels or []:
            n_labelled += 1
            n_consistent += majority_vote(v)
    return n_labelled, n_consistent


def dataset_stats(engine: Engine, dataset_id: int) -> dict[str, Any]:
    """Items, sentences, label kinds, mean human score and the share labelled consistent."""
    with get_session(engine) as session:
        ds = db_datasets.get_dataset(session=session, dataset_id=dataset_id)
        if ds is None:
            raise InputError(f"Dataset #{dataset_id} does not exist (it was deleted?).")
        agg = db_datasets.dataset_aggregates(session=session, dataset_id=dataset_id)
        # Counted by the database and streamed: a 50,000-item dataset is never held whole for its figures.
        n_sentences = db_datasets.sentence_count(session=session, dataset_id=dataset_id)
        totals = db_datasets.sentence_label_totals(session=session, dataset_id=dataset_id)
        n_labelled, n_consistent = totals if totals is not None else _label_totals(session, dataset_id)
        label_kinds, n_rejected = list(ds.label_kinds), ds.n_rejected
    return {
        "items": int(agg["items"]),
        "sentences": n_sentences,
        "references": int(agg["references"]),
        "rejected": n_rejected,
        "label_kinds": label_kinds,
        "scored": int(agg["scored"]),
        "score_mean": float(agg["score_mean"]) if agg["score_mean"] is not None else None,
        "score_min": agg["score_min"],
        "score_max": agg["score_max"],
        "labelled": int(agg["labelled"]),
        "share_consistent": float(agg["share_consistent"]) if agg["share_consistent"] is not None else None,
        "sentences_labelled": n_labelled,
        "sentence_share_consistent": n_consistent / n_labelled if n_labelled else None,
    }
