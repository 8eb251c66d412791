"""The shipped evidence checker's sentence verdicts on QAGS-CNN/DM, as the app gives them (no refitting).

Prints, for each mode (lexical only; MiniLM alignments when installed), on the sentences with a majority label:
balanced accuracy of the verdict (unknown counted as inconsistent, and unknown left out with the share decided),
each with a 95% bootstrap interval and n, and how many sentences each rule decided. Use it to compare a change
of the checker's rules with what it replaces (bench/evidence_qags.py refits the weights instead).
The data file is read where it is; without it the script says so and exits 0.
Run: .venv/bin/python bench/evidence_verdicts.py [PATH] [--lexical-only]
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from evidence_qags import DEFAULT_PATH, load
from record import record, start

from services import stats
from services.dcr import evidence


def figures(found: list, labels: list[float]) -> dict:
    y = np.array(labels)
    keep = np.isfinite(y)
    verdict = np.array([se.verdict for se in found])
    strict = (verdict == "consistent").astype(float)  # unknown counted as inconsistent
    ba = stats.classification(strict[keep], y[keep].astype(int), threshold=0.5).balanced_accuracy
    lo, hi = stats.balanced_accuracy_interval(strict[keep], y[keep].astype(int), 0.5, n_boot=1000, seed=0)
    print(f"  balanced accuracy, unknown as inconsistent: {ba:.3f} [{lo:.3f}, {hi:.3f}] (n = {int(keep.sum())})")
    decided = keep & (verdict != "unknown")
    ba2 = stats.classification(strict[decided], y[decided].astype(int), threshold=0.5).balanced_accuracy
    lo2, hi2 = stats.balanced_accuracy_interval(strict[decided], y[decided].astype(int), 0.5, n_boot=1000, seed=0)
    print(
        f"  balanced accuracy, decided only: {ba2:.3f} [{lo2:.3f}, {hi2:.3f}] (n = {int(decided.sum())}, "
        f"{decided.sum() / keep.sum():.1%} decided)"
    )
    rules = Counter((se.rule, se.verdict) for se, k in zip(found, keep, strict=True) if k)
    print("  decided by rule: " + ", ".join(f"{r}/{v} {n}" for (r, v), n in sorted(rules.items())))
    return {
        "balanced accuracy, unknown as inconsistent": f"{ba:.3f} [{lo:.3f}, {hi:.3f}], n {int(keep.sum())}",
        "balanced accuracy, decided only": f"{ba2:.3f} [{lo2:.3f}, {hi2:.3f}], n {int(decided.sum())}",
        "share of sentences decided": float(decided.sum() / keep.sum()),
    }


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    path = Path(args[0]) if args else DEFAULT_PATH
    if not path.exists():
        print(f"{path} not found: nothing to measure.")
        return 0
    refs, sents, labels = load(path)
    modes = [("lexical only", evidence.lexical_only)]
    if evidence.embeddings_available() and "--lexical-only" not in argv:
        modes.append(("MiniLM alignments", None))
    flat_labels = [v for row in labels for v in row]
    began, out = start(), {}
    for name, emb in modes:
        found = [se for doc in evidence.analyse_many(list(zip(refs, sents, strict=True)), embedder=emb) for se in doc]
        print(f"{name}: {len(found)} sentences of {len(refs)} summaries")
        out |= {f"{name}: {k}": v for k, v in figures(found, flat_labels).items()}
    record("evidence", "evidence_verdicts", out, argv=["bench/evidence_verdicts.py", *argv], started=began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
