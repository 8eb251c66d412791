"""Reading dataset files: QAGS, SummEval, PAWS/QQP and generic JSONL/CSV/TSV, with rejected rows and why."""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from services import tables
from services.datasets.items import (
    IMPORT_ADVICE,
    LABEL_KINDS,
    ColumnMapping,
    ImportedItem,
    ImportResult,
    RejectedRow,
    has_kind,
    majority_vote,
    parse_label,
    parse_score,
    parse_sentence_labels,
    parse_system,
)
from services.errors import InputError
from services.tables import TableFormat
from services.text import split_sentences

UPLOAD_TYPES = ("jsonl", "json", "csv", "tsv")
GENERIC_FORMATS = ("jsonl", "csv", "tsv")
FORMAT_LABELS = {
    "qags": "QAGS (article + summary sentences with worker votes)",
    "summeval": "SummEval model annotations (paired JSONL)",
    "paws": "PAWS / QQP (TSV with a header)",
    "jsonl": "Generic JSONL (or a JSON array)",
    "csv": "Generic CSV",
    "tsv": "Generic TSV",
}
SUMMEVAL_ASPECTS = ("coherence", "consistency", "fluency", "relevance")


class _Reject(Exception):
    """A row that cannot be imported; the message is the reason shown to the user."""


# -- reading files -------------------------------------------------------------------------------
def _decode(data: bytes) -> str:
    # every import reads through here: the upload widget's limit holds for the CLI and any other caller too
    return tables.decode(data, advice=IMPORT_ADVICE)


def _text(obj: dict[str, Any], key: str, what: str | None = None) -> str:
    """A required non-empty text field."""
    what = what or key
    if key not in obj:
        raise _Reject(f"missing field '{key}'")
    value = obj[key]
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise _Reject(f"'{key}' is not text")
    value = value.strip()
    if not value:
        raise _Reject(f"empty {what} ('{key}')")
    return value


def _finish(item: ImportedItem) -> ImportedItem:
    """Split the candidate once, here, so batch runs never re-split; check sentence labels line up."""
    if item.sentences is None:
        item.sentences = split_sentences(item.candidate)
    if not item.sentences:
        raise _Reject("the candidate has no sentence (only punctuation or whitespace)")
    if item.sentence_labels is not None and len(item.sentence_labels) != len(item.sentences):
        raise _Reject(
            f"{len(item.sentence_labels)} sentence label(s) but the candidate has {len(item.sentences)} "
            "sentence(s); give the candidate as a JSON list of sentences to fix the split"
        )
    return item


@dataclass
class Reading:
    """A file opened by its reader: the format, task and provenance, and its rows, not yet read."""

    format: str
    task: str
    records: Iterator[tables.Record]
    make: Callable[[int, dict[str, Any]], ImportedItem]
    meta: dict[str, Any] = field(default_factory=dict)


# A whole file's decoded text, or a binary stream (a file, an upload) that is read a line at a time.
Source = str | BinaryIO


def _json_records(source: Source) -> Iterator[tables.Record]:
    return tables.json_records(source) if isinstance(source, str) else tables.stream_json_records(source)


def _table_records(source: Source, fmt: TableFormat, *, quoted: bool = True):
    if isinstance(source, str):
        return tables.records(source, fmt, quoted=quoted)
    return tables.stream_records(source, fmt, quoted=quoted)


def _id_key(external_id: str) -> str | bytes:
    # every id is remembered until the end of the file: a long one by a 16-byte digest of it
    return external_id if len(external_id) <= 64 else hashlib.blake2b(external_id.encode(), digest_size=16).digest()


def scan(reading: Reading) -> Iterator[ImportedItem | RejectedRow]:
    """Each row of the file in order: the item it gives, or the rejected row and why (a row reusing an earlier
    row's id is rejected). Rows are read as they are asked for."""
    first_row: dict[str | bytes, int] = {}  # id -> the row that gave it first: batches, labels, cards key items by it
    for row, value, error in reading.records:
        try:
            if error:
                raise _Reject(error)
            if not isinstance(value, dict):
                raise _Reject("not a JSON object")
            item = _finish(reading.make(row, value))
            seen = first_row.setdefault(_id_key(item.external_id), row)
            if seen != row:
                raise _Reject(f"id {item.external_id!r} repeats row {seen}; give each row its own id")
            yield item
        except _Reject as exc:
            yield RejectedRow(row, str(exc))


def no_valid_row(n_rejected: int, first: list[RejectedRow]) -> InputError:
    """The refusal of a file that gave no item: it had no data row, or every row was rejected."""
    if not n_rejected:
        return InputError("The file has no data row.")
    problems = "; ".join(f"row {r.row}: {r.reason}" for r in first[:3])
    return InputError(f"No valid row in this file ({n_rejected:,} rejected). First problems: {problems}.")


def _collect(reading: Reading) -> ImportResult:
    items: list[ImportedItem] = []
    rejected: list[RejectedRow] = []
    for got in scan(reading):
        (items if isinstance(got, ImportedItem) else rejected).append(got)  # type: ignore[arg-type]
    if not items:
        raise no_valid_row(len(rejected), rejected)
    kinds = [k for k in LABEL_KINDS if any(has_kind(it, k) for it in items)]
    return ImportResult(
        format=reading.format, task=reading.task, items=items, rejected=rejected, label_kinds=kinds, meta=reading.meta
    )


# -- QAGS --------------------------------------------------------------------------------------
def _qags_item(row: int, obj: dict[str, Any]) -> ImportedItem:
    article = _text(obj, "article", "article")
    given = obj.get("summary_sentences")
    if given is None:
        raise _Reject("missing field 'summary_sentences'")
    if not isinstance(given, list) or not given:
        raise _Reject("'summary_sentences' must be a non-empty list")
    sentences: list[str] = []
    labels: list[dict[str, int]] = []
    for k, s in enumerate(given, 1):
        if not isinstance(s, dict):
            raise _Reject(f"summary sentence {k} is not an object")
        text = s.get("sentence")
        if not isinstance(text, str) or not text.strip():
            raise _Reject(f"summary sentence {k} has no text")
        responses = s.get("responses")
        if not isinstance(responses, list) or not responses:
            raise _Reject(f"summary sentence {k} has no worker responses")
        votes: dict[str, int] = {}
        for r in responses:
            if not isinstance(r, dict) or r.get("worker_id") is None:
                raise _Reject(f"summary sentence {k}: a response has no worker_id")
            worker = str(r["worker_id"])
            answer = str(r.get("response", "")).strip().lower()
            if answer not in ("yes", "no"):
                raise _Reject(f"summary sentence {k}: response {r.get('response')!r} is not yes or no")
            if worker in votes:
                raise _Reject(f"summary sentence {k}: worker {worker} answered twice")
            votes[worker] = 1 if answer == "yes" else 0
        sentences.append(text.strip())
        labels.append(votes)
    majority = [majority_vote(v) for v in labels]
    return ImportedItem(
        external_id=str(row),
        reference=article,
        candidate=" ".join(sentences),
        sentences=sentences,
        human_score=sum(majority) / len(majority),
        human_label=int(all(majority)),
        sentence_labels=labels,
    )


def _qags(source: Source) -> Reading:
    return Reading("qags", "summarization", _json_records(source), _qags_item)


def read_qags(data: bytes) -> ImportResult:
    """QAGS JSONL (article + summary_sentences with MTurk yes/no votes); scores by majority vote."""
    return _collect(_qags(_decode(data)))


# -- SummEval ----------------------------------------------------------------------------------
def _aspect_means(annotations: Any, who: str) -> dict[str, float]:
    if annotations is None:
        return {}
    if not isinstance(annotations, list):
        raise _Reject(f"'{who}_annotations' is not a list")
    means: dict[str, float] = {}
    for aspect in SUMMEVAL_ASPECTS:
        values: list[float] = []
        for i, a in enumerate(annotations, 1):
            if not isinstance(a, dict):
                raise _Reject(f"{who} annotation {i} is not an object")
            if aspect in a:
                try:
                    x = parse_score(a[aspect])
                except ValueError as exc:
                    raise _Reject(f"{who} annotation {i}: {aspect} {exc}") from None
                if x is not None:
                    values.append(x)
        if values:
            means[aspect] = sum(values) / len(values)
    return means


def _summeval_item(row: int, obj: dict[str, Any]) -> ImportedItem:
    source_key = next((k for k in ("text", "src", "article") if isinstance(obj.get(k), str) and obj[k].strip()), None)
    if source_key is None:
        raise _Reject(
            "no source article: this looks like the aligned file without sources; import "
            "model_annotations.aligned.paired.jsonl (the 'paired' file, with the article in 'text')"
        )
    reference = obj[source_key].strip()
    candidate = _text(obj, "decoded", "summary")
    experts_raw = obj.get("expert_annotations")
    if not experts_raw:
        raise _Reject("missing field 'expert_annotations'")
    experts = _aspect_means(experts_raw, "expert")
    turkers = _aspect_means(obj.get("turker_annotations"), "turker")
    consistency = experts.get("consistency")
    if consistency is None:
        raise _Reject("the expert annotations have no consistency score")
    if not 1 <= consistency <= 5:
        raise _Reject(f"expert consistency {consistency:g} is outside the 1–5 scale")
    article_id = str(obj.get("id") or "").strip()
    model_id = str(obj.get("model_id") or "").strip()
    return ImportedItem(
        external_id="/".join(p for p in (article_id, model_id) if p) or str(row),
        reference=reference,
        candidate=candidate,
        human_score=(consistency - 1) / 4,
        human_label=int(math.isclose(consistency, 5.0)),
        system=model_id or None,
        extra={
            "model_id": model_id,
            "article_id": article_id,
            "filepath": obj.get("filepath"),
            "expert": experts,
            "turker": turkers,
            "n_experts": len(experts_raw),
            "n_turkers": len(obj.get("turker_annotations") or []),
        },
    )


def _summeval(source: Source) -> Reading:
    meta = {
        "human_score": "(mean expert consistency - 1) / 4; human_label = all experts gave 5",
        "score_range": [1, 5],  # the experts' scale: Summ-NLI's score mode asks on it (paper 003, 3.1)
    }
    return Reading("summeval", "summarization", _json_records(source), _summeval_item, meta)


def read_summeval(data: bytes) -> ImportResult:
    """SummEval model_annotations JSONL (the paired file): mean expert consistency rescaled to [0, 1]."""
    return _collect(_summeval(_decode(data)))


# -- PAWS / QQP --------------------------------------------------------------------------------
_PAWS = {"paws": ("sentence1", "sentence2", "label"), "qqp": ("question1", "question2", "is_duplicate")}


def read_paws(data: bytes) -> ImportResult:
    """PAWS (id, sentence1, sentence2, label) or QQP (…, question1, question2, is_duplicate) TSV."""
    return _collect(_paws(_decode(data)))


def _paws(source: Source) -> Reading:
    header, records = _table_records(source, "tsv", quoted=False)
    variant = next((v for v, cols in _PAWS.items() if set(cols) <= set(header)), None)
    if variant is None:
        raise InputError(
            f"Unrecognised header ({', '.join(header)[:200]}). PAWS needs the columns id, sentence1, sentence2, "
            "label; QQP needs id, question1, question2, is_duplicate (tab-separated, with the header line)."
        )
    ref_col, cand_col, label_col = _PAWS[variant]

    def make(row: int, rec: dict[str, Any]) -> ImportedItem:
        reference = _text(rec, ref_col, "first sentence")
        candidate = _text(rec, cand_col, "second sentence")
        try:
            label = parse_label(rec.get(label_col))
        except ValueError as exc:
            raise _Reject(str(exc)) from None
        if label is None:
            raise _Reject(f"empty label ('{label_col}')")
        extra = {k: rec[k] for k in ("qid1", "qid2") if rec.get(k)}
        return ImportedItem(
            external_id=(rec.get("id") or "").strip() or str(row),
            reference=reference,
            candidate=candidate,
            human_label=label,
            extra=extra,
        )

    return Reading("paws", "semantic", records, make, {"variant": variant})


# -- generic JSONL / CSV / TSV -----------------------------------------------------------------
def _head(data: bytes | BinaryIO) -> BinaryIO:
    """The file as a stream, for a look at its first rows: only they are read (and decoded); its size and that
    it holds any text are checked first. (An import reads the rest, and refuses a file that is not UTF-8.) A
    stream (an upload spooled to a file) is read from its start, a chunk at a time until some text is seen."""
    if not isinstance(data, bytes | bytearray | memoryview):
        tables.check_stream(data, "The file", IMPORT_ADVICE)
        data.seek(0)
        blank = True
        while blank and (chunk := data.read(65536)):
            blank = not chunk.decode("utf-8-sig", errors="replace").strip()
        data.seek(0)
        if blank:
            raise InputError("The file is empty.")
        return data
    tables.check_size(data, "The file", IMPORT_ADVICE)
    if not data[:65536].strip() and not data.decode("utf-8-sig", errors="replace").strip():
        raise InputError("The file is empty.")
    return io.BytesIO(data)  # shares the bytes: no copy


def sniff_columns(data: bytes | BinaryIO, fmt: TableFormat) -> list[str]:
    """The column names of a generic file: the CSV/TSV header, or the keys of the first JSONL objects."""
    stream = _head(data)
    if fmt in ("csv", "tsv"):
        header, _ = _table_records(stream, fmt)
        return header or []
    columns: dict[str, None] = {}
    seen = 0
    for row, value, error in _json_records(stream):
        if tables.is_too_many_fields(error):
            raise InputError(f"Row {row} has {error}. Keep the columns to import and save the file again.")
        if error is None and isinstance(value, dict):
            tables.check_columns(value)
            columns.update(dict.fromkeys(str(k) for k in value))
            tables.check_columns(columns)
            seen += 1
            if seen >= 200:
                break
    if not columns:
        raise InputError("No JSON object found in the first rows; is this a JSONL file (one object per line)?")
    return list(columns)


_DEFAULTS = {
    "reference": (
        "reference",
        "article",
        "source",
        "document",
        "src",
        "text",
        "context",
        "premise",
        "sentence1",
        "question1",
        "true_answer",
    ),
    "candidate": (
        "candidate",
        "summary",
        "claim",
        "hypothesis",
        "decoded",
        "output",
        "prediction",
        "generated",
        "response",
        "answer",
        "sentence2",
        "question2",
        "attempt",
    ),
    "id": ("id", "external_id", "uid", "key", "example_id", "doc_id"),
    "human_score": ("human_score", "score", "consistency", "faithfulness", "rating"),
    "human_label": ("human_label", "label", "is_consistent", "consistent", "factual", "is_duplicate"),
    "sentence_labels": ("sentence_labels", "sentence_label", "labels_per_sentence"),
    "system": ("system", "system_id", "model_id", "system_name"),
}


def default_mapping(columns: list[str]) -> dict[str, str | None]:
    """A first guess of which column holds what, from common column names (case-insensitive)."""
    lower = {c.lower(): c for c in columns}
    out: dict[str, str | None] = {}
    used: set[str] = set()
    for role, names in _DEFAULTS.items():
        pick = next((lower[n] for n in names if n in lower and lower[n] not in used), None)
        out[role] = pick
        if pick:
            used.add(pick)
    # A file with two text columns and no known names: the first is the reference, the second the candidate.
    rest = [c for c in columns if c not in used]
    if out["reference"] is None and rest:
        out["reference"] = rest.pop(0)
    if out["candidate"] is None and rest:
        out["candidate"] = rest.pop(0)
    return out


def read_table(data: bytes, fmt: TableFormat, mapping: ColumnMapping, *, task: str = "summarization") -> ImportResult:
    """A generic JSONL (or JSON array), CSV or TSV file, read through a column mapping."""
    _check_mapping(mapping)
    return _collect(_table(_decode(data), fmt, mapping, task))


def _check_mapping(mapping: ColumnMapping) -> None:
    if not mapping.reference or not mapping.candidate:
        raise InputError("Choose the reference column and the candidate column.")
    if mapping.reference == mapping.candidate:
        raise InputError("The reference and the candidate must be different columns.")


def _table(source: Source, fmt: TableFormat, mapping: ColumnMapping, task: str) -> Reading:
    header, records = _table_records(source, fmt)
    if header is not None:
        wanted = [
            c
            for c in (
                mapping.reference,
                mapping.candidate,
                mapping.id,
                mapping.human_score,
                mapping.human_label,
                mapping.sentence_labels,
                mapping.system,
            )
            if c
        ]
        absent = [c for c in wanted if c not in header]
        if absent:
            raise InputError(f"Column(s) {', '.join(absent)} are not in the header ({', '.join(header)[:200]}).")

    def make(row: int, rec: dict[str, Any]) -> ImportedItem:
        reference = _text(rec, mapping.reference, "reference")
        if mapping.candidate not in rec:
            raise _Reject(f"missing field '{mapping.candidate}'")
        raw = rec[mapping.candidate]
        sentences: list[str] | None = None
        if isinstance(raw, list):  # a JSONL candidate given as its sentences: keep that split
            if not all(isinstance(s, str) for s in raw):
                raise _Reject(f"'{mapping.candidate}' is a list but not a list of sentences")
            sentences = [s.strip() for s in raw if s.strip()]
            candidate = " ".join(sentences)
            if not candidate:
                raise _Reject(f"empty candidate ('{mapping.candidate}')")
        else:
            candidate = _text(rec, mapping.candidate, "candidate")
        external_id = str(rec.get(mapping.id) or "").strip() if mapping.id else ""
        try:
            score = parse_score(rec.get(mapping.human_score)) if mapping.human_score else None
            label = parse_label(rec.get(mapping.human_label)) if mapping.human_label else None
            sentence_labels = (
                parse_sentence_labels(rec.get(mapping.sentence_labels)) if mapping.sentence_labels else None
            )
            system = parse_system(rec.get(mapping.system)) if mapping.system else None
        except ValueError as exc:
            raise _Reject(str(exc)) from None
        return ImportedItem(
            external_id=external_id or str(row),
            reference=reference,
            candidate=candidate,
            sentences=sentences,
            human_score=score,
            human_label=label,
            sentence_labels=sentence_labels,
            system=system,
        )

    mapping_meta = {k: v for k, v in vars(mapping).items() if v}
    return Reading(fmt, task, records, make, {"columns": mapping_meta})


# -- guessing, preview, dispatch ---------------------------------------------------------------
def guess_format(name: str, data: bytes | BinaryIO) -> str:
    """The likely format of an upload from its name and first row: qags, summeval, paws, jsonl, csv or tsv.
    From a stream (an upload spooled to a file) only its first 64 KiB are read, or the whole of a .json file
    (one JSON document, which its import reads whole too)."""
    suffix = Path(name).suffix.lower().lstrip(".")
    if not isinstance(data, bytes | bytearray | memoryview):
        data.seek(0)
        raw = data.read() if suffix == "json" else data.read(65536)
        data.seek(0)
        data = raw
    head = data[:65536].decode("utf-8-sig", errors="replace")
    if suffix == "tsv":
        first = head.split("\n", 1)[0].lower().split("\t")
        cols = {c.strip() for c in first}
        return "paws" if any(set(c) <= cols for c in _PAWS.values()) else "tsv"
    if suffix == "csv":
        return "csv"
    first_obj: dict[str, Any] | None = None
    try:
        for _row, value, error in tables.json_records(data.decode("utf-8-sig") if suffix == "json" else head):
            if error is None and isinstance(value, dict):
                first_obj = value
                break
    except UnicodeDecodeError:
        first_obj = None
    if first_obj is not None:
        keys = set(first_obj)
        if {"article", "summary_sentences"} <= keys:
            return "qags"
        if {"decoded", "expert_annotations"} <= keys:
            return "summeval"
        return "jsonl"
    if "\t" in head.split("\n", 1)[0]:
        return "tsv"
    return "jsonl" if suffix in ("jsonl", "json") else "csv"


def preview_rows(data: bytes | BinaryIO, fmt: str, n: int = 5, width: int = 160) -> list[dict[str, str]]:
    """The first n raw rows of a file, each value cut to `width` characters, for a look before importing."""
    stream = _head(data)
    if fmt in ("csv", "tsv", "paws"):
        _, records = _table_records(stream, "csv" if fmt == "csv" else "tsv", quoted=fmt != "paws")
    else:
        records = _json_records(stream)
    out: list[dict[str, str]] = []
    for row, value, error in records:
        if error is None and isinstance(value, dict):
            cells = {str(k): v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in value.items()}
            out.append(
                {"row": str(row), **{k: v if len(v) <= width else v[: width - 1] + "…" for k, v in cells.items()}}
            )
        else:
            out.append({"row": str(row), "problem": error or "not a JSON object"})
        if len(out) >= n:
            break
    return out


def read_dataset(
    data: bytes, fmt: str, mapping: ColumnMapping | None = None, *, task: str = "summarization"
) -> ImportResult:
    """Read a whole file in any supported format (generic formats need a mapping)."""
    _check_format(fmt, mapping)
    return _collect(open_dataset(_decode(data), fmt, mapping, task=task))


def _check_format(fmt: str, mapping: ColumnMapping | None) -> None:
    if fmt not in FORMAT_LABELS:
        raise InputError(f"Unknown format {fmt!r}; use one of {', '.join(FORMAT_LABELS)}.")
    if fmt in GENERIC_FORMATS:
        if mapping is None:
            raise InputError("A generic file needs a column mapping: which column is the reference, the candidate, …")
        _check_mapping(mapping)


def open_dataset(
    source: Source, fmt: str, mapping: ColumnMapping | None = None, *, task: str = "summarization"
) -> Reading:
    """A file opened in its format, from its decoded text or from a binary stream read a line at a time (then
    only a JSON array is read whole); its rows are read as `scan` asks for them. A CSV or TSV header is read
    and checked here."""
    _check_format(fmt, mapping)
    if fmt == "qags":
        return _qags(source)
    if fmt == "summeval":
        return _summeval(source)
    if fmt == "paws":
        return _paws(source)
    return _table(source, fmt, mapping, task)  # type: ignore[arg-type]
