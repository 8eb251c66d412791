"""A file of reference/candidate pairs (what `cli.py evaluate` reads) as a dataset: imported once, found by its
hash after that. Light on purpose: it loads neither the model client nor the batch engine."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Engine

from services import tables
from services.datasets.items import IMPORT_ADVICE, ColumnMapping, ImportSummary
from services.datasets.store import SavedDataset, import_file
from services.errors import InputError

NAME_PREFIX = "cli: "
COLUMNS = ColumnMapping(reference="reference", candidate="candidate", id="id")


def import_pairs(engine: Engine, *, path: Path, task: str) -> tuple[SavedDataset, ImportSummary | None]:
    """The file as a dataset, imported now or found by its hash (then with no import result).

    Raises InputError when the file cannot be used at all.
    """
    tables.check_path(path, IMPORT_ADVICE)  # size checked before reading
    try:
        return import_file(
            engine,
            name=f"{NAME_PREFIX}{path.name}",
            data=path,  # read from disk a chunk at a time
            fmt=tables.format_of(path.name),
            mapping=COLUMNS,
            task=task,
        )
    except InputError as exc:
        raise InputError(f"{path}: {exc} Each row needs id, reference and candidate.") from None
