"""One reader for every table a user gives us, uploaded or on the command line: CSV, TSV, a JSON array
(or {"items": [...]}) and JSONL.

Rows carry the line they start on, so a bad row is reported with its line and the reason. Callers that import
what they can (datasets, labels) take `records` and keep the rejected rows; callers that need the whole file
take `read_rows` or `read_frame`, which refuse the file at its first bad row. The CSV and TSV rows are
tokenised by the csv module rather than pandas: only it tells the line a row starts on, which the messages
name; `read_frame` hands the rows on as a pandas DataFrame indexed by that line.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from services.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

TableFormat = Literal["jsonl", "csv", "tsv"]
# (line or array position, the row as a dict, or None with the reason it cannot be read)
Record = tuple[int, Any, str | None]

# The default of the upload limit (Settings.max_upload_mb, env MAX_UPLOAD_MB); the browser refuses larger
# uploads first (.streamlit/config.toml and serve.py set server.maxUploadSize to the same), and this holds for
# every other caller that reads an upload too.
MAX_UPLOAD_MB = 256
LIMIT_ADVICE = "raise the MAX_UPLOAD_MB setting, in MB, to allow larger files"


def upload_limit_mb() -> int:
    """The upload limit in force, in MB (the MAX_UPLOAD_MB setting)."""
    from services.config import get_settings

    return get_settings().max_upload_mb


_DELIMITERS = {"csv": ",", "tsv": "\t"}


MB = 1024 * 1024
# Columns a table may have: a dataset has a handful (reference, candidate, id, judgments, metadata), and every
# column becomes an option of each column picker on the Datasets page.
MAX_COLUMNS = 1_000
IMPORT_ADVICE = "Split it into smaller files and import each."  # what to do with a file over the limit
_CHUNK = MB  # bytes read at a time from an input file


def _too_big(name: str, size: int, advice: str) -> InputError:
    limit = upload_limit_mb()
    return InputError(f"{name} is {size / MB:.1f} MB; the limit is {limit} MB ({LIMIT_ADVICE}). {advice}".rstrip())


def too_big(name: str, size: int, advice: str) -> InputError:
    """The refusal of a file of `size` bytes, over the upload limit."""
    return _too_big(name, size, advice)


def check_size(data: bytes, name: str, advice: str) -> None:
    """InputError when `data` is over the one upload limit (the MAX_UPLOAD_MB setting), whoever sent it."""
    if len(data) > upload_limit_mb() * MB:
        raise _too_big(name, len(data), advice)


def format_of(name: str) -> TableFormat:
    """The table format a file name says: .csv, .tsv, else JSON (an array, or one object per line)."""
    suffix = Path(name).suffix.lower()
    return "csv" if suffix == ".csv" else "tsv" if suffix == ".tsv" else "jsonl"


def check_path(path: Path, advice: str = "") -> int:
    """The size of an input file, from the file system: InputError when there is no such file or the size is
    over the upload limit. Nothing is read."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    size = path.stat().st_size
    if size > upload_limit_mb() * MB:
        raise _too_big(str(path), size, advice)
    return size


def read_file(path: Path, advice: str = "") -> bytes:
    """The bytes of an input file; InputError when there is no such file or it is over the upload limit.

    The size is checked before anything is read, and the file is read a chunk at a time up to the limit, so a
    file that grows while it is read (or whose size the file system does not know) is refused as well: memory
    never holds more than the limit, whatever the file."""
    size = check_path(path, advice)
    limit = upload_limit_mb() * MB
    buf = bytearray()
    with path.open("rb", buffering=0) as f:
        while chunk := f.read(min(_CHUNK, limit + 1 - len(buf))):
            buf += chunk
            if len(buf) > limit:
                raise _too_big(str(path), max(size, len(buf)), advice)
    return bytes(buf)


def decode(data: bytes | str, name: str | None = None, *, allow_empty: bool = False, advice: str | None = None) -> str:
    """The text of a file, or InputError when it is empty, over the size limit (when `advice` says what to do
    instead) or not UTF-8. Messages name the file when `name` is given."""
    if isinstance(data, str):
        text = data
    else:
        if advice is not None:
            check_size(data, name or "The file", advice)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            if name:
                raise InputError(f"{name}: not UTF-8 text") from None
            at = exc.start + (len(_BOM) if data.startswith(_BOM) else 0)  # utf-8-sig counts after the mark
            raise _not_utf8(at, data[:at].count(b"\n") + 1) from None
    if not allow_empty and not text.strip():
        raise InputError(f"{name}: the file is empty." if name else "The file is empty.")
    return text


def _not_utf8(at: int, line: int) -> InputError:
    return InputError(
        f"The file is not UTF-8 text (byte {at:,}, on line {line:,}, cannot be read). "
        "Save it as UTF-8 and upload it again."
    )


def json_problem(exc: json.JSONDecodeError) -> str:
    """Why a line is not JSON, and the column where reading it stopped."""
    # some of json's messages end in "at" ("Unterminated string starting at"): the column completes them
    where = "" if exc.msg.endswith(" at") else " at"
    return f"not valid JSON ({exc.msg}{where} column {exc.colno})"


def too_many_fields(n: int) -> str:
    """Why a JSON row with more keys than MAX_COLUMNS is refused (the row is rejected, like any bad row)."""
    return f"{n:,} fields; the limit is {MAX_COLUMNS:,}"


def is_too_many_fields(reason: str | None) -> bool:
    """Whether a record's reason is `too_many_fields`."""
    return bool(reason) and reason.endswith(f" fields; the limit is {MAX_COLUMNS:,}")


def _bounded(line: int, value: Any) -> Record:
    # a JSON row is a table's row: no more keys than a header may name columns
    if isinstance(value, dict) and len(value) > MAX_COLUMNS:
        return line, None, too_many_fields(len(value))
    return line, value, None


# A JSON line with more key ends than this (at any depth) is refused before it is parsed: parsing a million keys
# takes a second and many times the line's size in memory; a row of a table has a handful.
_PARSE_LIMIT = 100 * MAX_COLUMNS
_KEY_END = re.compile(r'(?<!\\)"\s*:')  # a string's closing quote and a colon: a key (quotes in strings are escaped)


def too_many_keys(line: str) -> int | None:
    """The keys of a JSON line too long to be a row (more than _PARSE_LIMIT, at any depth), found without parsing
    it; None for any other line."""
    if line.count(":") > _PARSE_LIMIT and (keys := sum(1 for _ in _KEY_END.finditer(line))) > _PARSE_LIMIT:
        return keys
    return None


def _json_line(number: int, line: str) -> Record:
    if (keys := too_many_keys(line)) is not None:
        return number, None, too_many_fields(keys)
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return number, None, json_problem(exc)
    return _bounded(number, value)


def json_records(text: str) -> Iterator[Record]:
    """A record for each object of a JSON array (or {"items": [...]}), or for each line of a JSONL file."""
    head = text.lstrip()
    if head.startswith(("[", '{"items"')):
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, dict):
            whole = whole.get("items")
        if isinstance(whole, list):
            for i, value in enumerate(whole, 1):
                yield _bounded(i, value)
            return
    # Split on "\n" only: JSON strings may hold U+2028 and other characters str.splitlines() breaks on.
    for i, line in enumerate(text.split("\n"), 1):
        line = line.strip()
        if not line:
            continue
        yield _json_line(i, line)


def delimited_records(
    text: str | Iterable[str], delimiter: str, *, quoted: bool = True
) -> tuple[list[str], Iterator[Record]]:
    """The header and a record (starting line, {column: value}) for each data row of a CSV or TSV file, from
    its text or from its lines (as `stream_lines` gives them: a file read a line at a time)."""
    csv.field_size_limit(max(csv.field_size_limit(), 64 * 1024 * 1024))  # articles are longer than 128 kB
    if isinstance(text, str):
        first = text[: text.find("\n")] if "\n" in text else text
        lines: Iterator[str] = iter(io.StringIO(text, newline=""))
    else:
        lines = iter(text)
        head = next(lines, "")
        first = head.rstrip("\r\n")
        lines = _chain_one(head, lines)
    reader = csv.reader(lines, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE)
    if not (quoted and '"' in first) and first.count(delimiter) >= MAX_COLUMNS:
        # refused from the first line's delimiters, before the csv module builds a field for each
        raise _too_many_columns(first.count(delimiter) + 1)
    try:
        header = [h.strip() for h in next(reader)]
    except (StopIteration, csv.Error) as exc:
        raise InputError(f"The file has no readable header row ({exc}).") from None
    if len(header) > MAX_COLUMNS:  # a quoted header that runs over several lines
        raise _too_many_columns(len(header))
    if not any(header):
        raise InputError("The first row (the header) is empty; the file needs a header naming its columns.")
    if len(set(header)) != len(header):
        dupes = sorted({h for h in header if header.count(h) > 1})
        raise InputError(f"The header names a column twice: {', '.join(dupes)}. Rename the columns.")

    def rows() -> Iterator[Record]:
        while True:
            start = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield start, None, f"unreadable row ({exc})"
                if reader.line_num < start:  # the reader cannot move past it
                    return
                continue
            if not fields or not any(f.strip() for f in fields):
                continue
            if len(fields) != len(header):
                yield start, None, f"has {len(fields)} fields but the header has {len(header)}"
                continue
            yield start, dict(zip(header, fields, strict=True)), None

    return header, rows()


def _too_many_columns(n: int, what: str = "The header names") -> InputError:
    return InputError(
        f"{what} {n:,} columns; the limit is {MAX_COLUMNS:,}. Keep the columns to import (reference, candidate, "
        "id, judgments) and save the file again."
    )


def check_columns(columns: list[str] | dict[str, object]) -> None:
    """InputError when the rows of a JSON table name more keys, together, than MAX_COLUMNS."""
    if len(columns) > MAX_COLUMNS:
        raise _too_many_columns(len(columns), "The rows name at least")


def _chain_one(head: str, rest: Iterator[str]) -> Iterator[str]:
    if head:
        yield head
    yield from rest


# -- reading a file as a stream: a line at a time, never whole ----------------------------------------
_BOM = codecs.BOM_UTF8
_LINE_BREAK = re.compile(r"(?<=\r)(?!\n)")  # a lone carriage return ends a line too, as in newline="" mode


def stream_size(stream: BinaryIO) -> int:
    """The size in bytes of a seekable binary stream (a file, an upload), without reading it."""
    size = stream.seek(0, io.SEEK_END)
    stream.seek(0)
    return size


def check_stream(stream: BinaryIO, name: str, advice: str) -> int:
    """The stream's size; InputError when it is over the upload limit, before anything is read."""
    size = stream_size(stream)
    if size > upload_limit_mb() * MB:
        raise _too_big(name, size, advice)
    return size


def stream_digest(stream: BinaryIO, name: str = "The file", advice: str = "") -> str:
    """The SHA-256 of a stream, read a chunk at a time, checking what `decode` checks of a whole file: InputError
    when it is not UTF-8 (naming the byte and the line), holds nothing but whitespace, or grows past the upload
    limit while being read."""
    digest = hashlib.sha256()
    limit, size, lines, blank = upload_limit_mb() * MB, 0, 0, True
    decoder = codecs.getincrementaldecoder("utf-8")()
    stream.seek(0)
    head = stream.read(len(_BOM))  # a byte-order mark is no text (utf-8-sig drops it)
    for chunk in _chunks(head, stream):
        digest.update(chunk)
        skip = len(chunk) if size == 0 and chunk == _BOM else 0
        pending = decoder.getstate()[0]  # the start of a character cut by the previous chunk (never a "\n")
        try:
            text = decoder.decode(chunk[skip:])
        except UnicodeDecodeError as exc:
            before = (pending + chunk)[: exc.start]
            raise _not_utf8(size - len(pending) + exc.start, lines + before.count(b"\n") + 1) from None
        blank = blank and not text.strip()
        size += len(chunk)
        lines += chunk.count(b"\n")
        if size > limit:
            raise _too_big(name, size, advice)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise _not_utf8(size - len(decoder.getstate()[0]), lines + 1) from None
    stream.seek(0)
    if blank:
        raise InputError("The file is empty.")
    return digest.hexdigest()


def _chunks(head: bytes, stream: BinaryIO) -> Iterator[bytes]:
    if head:
        yield head
    while chunk := stream.read(_CHUNK):
        yield chunk


def stream_lines(stream: BinaryIO) -> Iterator[str]:
    """The decoded lines of a UTF-8 file, a line at a time, split as csv's newline="" mode splits them (at
    "\n", "\r\n" or a lone "\r"); a leading byte-order mark is dropped. InputError, naming the byte and the
    line, at the first byte that is not UTF-8."""
    for _line, _offset, text in _decoded_lines(stream):
        if "\r" in text:
            yield from (part for part in _LINE_BREAK.split(text) if part)
        else:
            yield text


def _decoded_lines(stream: BinaryIO) -> Iterator[tuple[int, int, str]]:
    """(line number, byte offset, text) of each "\n"-ended line of a UTF-8 stream."""
    offset = 0
    for number, raw in enumerate(iter(stream.readline, b""), 1):
        skip = 3 if number == 1 and raw.startswith(_BOM) else 0
        try:
            text = raw[skip:].decode("utf-8")
        except UnicodeDecodeError as exc:
            at = offset + skip + exc.start
            line = number + raw[: skip + exc.start].count(b"\n")
            raise InputError(
                f"The file is not UTF-8 text (byte {at:,}, on line {line:,}, cannot be read). "
                "Save it as UTF-8 and upload it again."
            ) from None
        yield number, offset, text
        offset += len(raw)


def _is_json_document(stream: BinaryIO) -> bool:
    """Whether the stream holds one JSON document (an array, or {"items": [...]}) rather than JSON lines."""
    head = b""
    while len(head.lstrip()) < 8 and (chunk := stream.read(_CHUNK)):
        head += chunk
    stream.seek(0)
    text = head[3:] if head.startswith(_BOM) else head
    return text.lstrip().startswith((b"[", b'{"items"'))


def stream_json_records(stream: BinaryIO) -> Iterator[Record]:
    """`json_records` of a file read a line at a time: a record for each line of a JSONL file. A JSON array
    (or {"items": [...]}) is one document and is read whole, as json_records reads it."""
    if _is_json_document(stream):
        yield from json_records(decode(stream.read()))
        return
    for number, _offset, text in _decoded_lines(stream):
        line = text.strip()
        if not line:
            continue
        yield _json_line(number, line)


def stream_records(
    stream: BinaryIO, fmt: TableFormat, *, quoted: bool = True
) -> tuple[list[str] | None, Iterator[Record]]:
    """`records` of a file read a line at a time (the header of a CSV or TSV is read at once)."""
    if fmt in _DELIMITERS:
        return delimited_records(stream_lines(stream), _DELIMITERS[fmt], quoted=quoted)
    if fmt == "jsonl":
        return None, stream_json_records(stream)
    raise InputError(f"Unknown table format {fmt!r}; use jsonl, csv or tsv.")


def records(text: str, fmt: TableFormat, *, quoted: bool = True) -> tuple[list[str] | None, Iterator[Record]]:
    """The header (None for JSON) and the records of a decoded file in `fmt`."""
    if fmt in _DELIMITERS:
        return delimited_records(text, _DELIMITERS[fmt], quoted=quoted)
    if fmt == "jsonl":
        return None, json_records(text)
    raise InputError(f"Unknown table format {fmt!r}; use jsonl, csv or tsv.")


def _strict(text: str, name: str, fmt: TableFormat) -> tuple[list[str], list[int], list[dict[str, Any]]]:
    """The columns, starting lines and rows of a whole table; InputError at the first row that cannot be read."""
    try:
        header, found = records(text, fmt)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
    is_array = header is None and text.lstrip().startswith(("[", '{"items"'))
    lines: list[int] = []
    rows: list[dict[str, Any]] = []
    for line, value, error in found:
        if error is None and not isinstance(value, dict):
            if is_array:
                raise InputError(f'{name}: expected a list of objects (or {{"items": [...]}})')
            error = "each line must be a JSON object"
        if error is not None:
            raise InputError(f"{name}:{line}: {error}")
        lines.append(line)
        rows.append(value)
    if header is not None:
        return header, lines, rows
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
        if len(columns) > MAX_COLUMNS:
            raise InputError(f"{name}: {_too_many_columns(len(columns), 'The rows name at least')}")
    return list(columns), lines, rows


def read_rows(data: bytes | str, name: str, *, fmt: TableFormat | None = None) -> list[dict[str, Any]]:
    """Every row of a table (format from `fmt`, else from the name); an empty file gives an empty list (the
    caller says what it needed). InputError names the file and the line of the first bad row."""
    text = decode(data, name, allow_empty=True)
    if not text.strip():
        return []
    return _strict(text, name, fmt or format_of(name))[2]


def read_frame(source: Path | bytes | str, name: str | None = None, *, fmt: TableFormat | None = None) -> pd.DataFrame:
    """A whole table as a DataFrame indexed by the line each row starts on, column names in lower case and
    text values stripped of surrounding spaces; an empty file gives an empty frame. InputError as for
    `read_rows`."""
    import pandas as pd  # only here: reading rows for a command-line import need not wait for pandas

    if isinstance(source, Path):
        name = name or str(source)
        source = read_file(source)
    name = name or "the file"
    text = decode(source, name, allow_empty=True)
    if not text.strip():
        return pd.DataFrame()
    columns, lines, rows = _strict(text, name, fmt or format_of(name))
    frame = pd.DataFrame.from_records(rows, columns=columns, index=pd.Index(lines, name="line"))
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    return frame.map(lambda v: v.strip() if isinstance(v, str) else v)
