"""The QAGS-CNN/DM crowd labels (../shared/data, never committed) and their agreement, computed independently."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import krippendorff
import numpy as np

_QAGS = Path("shared") / "data" / "qags_cnndm_mturk.jsonl"
# Beside the checkout (/work/main -> /work/shared), or further up for a worktree (/work/wt/NAME -> /work/shared).
QAGS_FILE = next(
    (p / _QAGS for p in Path(__file__).resolve().parents[3:] if (p / _QAGS).is_file()),
    Path(__file__).resolve().parents[3] / _QAGS,
)


@cache
def qags_alpha() -> float:
    """Krippendorff's alpha (nominal) among the QAGS workers, from the `krippendorff` package on the raw file.

    Independent of the app: the reliability matrix (162 workers x 714 sentences, yes = 1, no = 0, NaN where a
    worker did not label a sentence) is built here from the JSON lines, with no app code, and handed to
    `krippendorff.alpha` (Castro 2017, the package in requirements.txt). It gives 0.5135443929556389.
    """
    sentences = [
        s
        for line in QAGS_FILE.read_text(encoding="utf-8").splitlines()
        if line.strip()
        for s in json.loads(line)["summary_sentences"]
    ]
    workers = sorted({r["worker_id"] for s in sentences for r in s["responses"]})
    row = {w: i for i, w in enumerate(workers)}
    matrix = np.full((len(workers), len(sentences)), np.nan)
    for col, s in enumerate(sentences):
        for r in s["responses"]:
            matrix[row[r["worker_id"]], col] = 1.0 if r["response"] == "yes" else 0.0
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"))
