"""A file of reference/candidate pairs (what `cli.py evaluate` reads) as a dataset: imported once, found by its
hash after that. Light on purpose: it loads neither the model client nor the batch engine."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

from sqlalchemy.engine import Engine

from services import tables
from services.datasets.items import IMPORT_ADVICE, ColumnMapping, ImportSummary
from services.datasets.store import SavedDataset, import_file
from services.errors import InputError

NAME_PREFIX = "cli: "
COLUMNS = ColumnMapping(reference="reference", candidate="candidate", id="id")
LABEL = "label"  # a row's human label (1 consistent, 0 inconsistent), kept as the dataset's, as `batch` keeps it


def _has_column(path: Path, fmt: str, name: str) -> bool:
    """Whether a CSV or TSV file's header names the column; a JSON line may carry it or not (always True)."""
    if fmt == "jsonl":
        return True
    with path.open(encoding="utf-8-sig", newline="") as fh:
        header = next(csv.reader(fh, delimiter="\t" if fmt == "tsv" else ","), [])
    return name in (h.strip() for h in header)


def import_pairs(engine: Engine, *, path: Path, task: str) -> tuple[SavedDataset, ImportSummary | None]:
    """The file as a dataset, imported now or found by its hash (then with no import result), with each row's
    `label` (1/0, true/false, consistent/inconsistent) as its human label where it has one, so that the batch
    can be compared with the labels afterwards (`cli.py report`).

    Raises InputError when the file cannot be used at all.
    """
    tables.check_path(path, IMPORT_ADVICE)  # size checked before reading
    fmt = tables.format_of(path.name)
    mapping = replace(COLUMNS, human_label=LABEL) if _has_column(path, fmt, LABEL) else COLUMNS
    try:
        return import_file(
            engine,
            name=f"{NAME_PREFIX}{path.name}",
            data=path,  # read from disk a chunk at a time
            fmt=fmt,
            mapping=mapping,
            task=task,
        )
    except InputError as exc:
        raise InputError(f"{path}: {exc} Each row needs id, reference and candidate.") from None
