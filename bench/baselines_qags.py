"""Figures on QAGS-CNN/DM (../shared/data/qags_cnndm_mturk.jsonl, 235 summaries, 714 sentences).

1. Krippendorff's alpha (nominal) among the MTurk workers: units = summary sentences, raters = worker_id,
   values yes=1 / no=0, with a 95% bootstrap interval over sentences.
2. The local baselines (ROUGE-2/ROUGE-L precision, recall, F; MiniLM embedding similarity, sentence-level
   and whole-text) against the summary-level human score (fraction of sentences with a majority "yes"):
   Pearson, Spearman, Kendall (tau-b) with 95% bootstrap intervals, and the time each baseline took.

The data file is read where it is (never copied into the project); without it the script says so and exits 0.
Run: .venv/bin/python bench/baselines_qags.py [PATH]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from record import record, start

from services import baselines, stats

DEFAULT_PATH = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "qags_cnndm_mturk.jsonl"
VOTE = {"yes": 1, "no": 0}


def load(path: Path) -> tuple[list[dict], pd.DataFrame]:
    """The items and the long table of ratings (unit = "item:sentence", rater = worker_id, value)."""
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [
        {"unit": f"{i}:{j}", "rater": r["worker_id"], "value": VOTE[r["response"].strip().lower()]}
        for i, item in enumerate(items)
        for j, sent in enumerate(item["summary_sentences"])
        for r in sent["responses"]
    ]
    return items, pd.DataFrame(rows)


def human_scores(items: list[dict]) -> list[float]:
    """Per summary: the fraction of its sentences whose workers' majority said "yes" (a tie counts as not yes)."""
    out = []
    for item in items:
        votes = [
            stats.majority({str(r["worker_id"]): VOTE[r["response"].strip().lower()] for r in s["responses"]})
            for s in item["summary_sentences"]
        ]
        out.append(sum(v == 1 for v in votes) / len(votes))
    return out


def fmt(res: stats.CorrelationResult) -> str:
    if res.r is None:
        return f"{'n/a':>22}"
    return f"{res.r:6.3f} [{res.ci_low:6.3f},{res.ci_high:6.3f}]"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT_PATH
    if not path.is_file():
        print(f"skipped: {path} not found (the QAGS-CNN/DM MTurk file from shared/data)")
        return 0
    began = start()
    items, ratings = load(path)
    print(
        f"{path.name}: {len(items)} summaries, {ratings['unit'].nunique()} sentences, "
        f"{ratings['rater'].nunique()} workers, {len(ratings)} ratings"
    )

    t = time.perf_counter()
    a = stats.alpha_from_long(ratings, "nominal", n_boot=1000, seed=0)
    print(f"\nKrippendorff's alpha (nominal, workers): {a.alpha!r}  (rounded {a.alpha:.4f})")
    print(
        f"  units {a.n_units}, pairable {a.n_pairable}, raters {a.n_raters}, 95% bootstrap over sentences "
        f"[{a.ci_low:.4f}, {a.ci_high:.4f}]  ({time.perf_counter() - t:.2f} s)"
    )

    human = human_scores(items)
    refs = [item["article"] for item in items]
    cands = [" ".join(s["sentence"] for s in item["summary_sentences"]) for item in items]
    print(f"\nhuman score: mean {sum(human) / len(human):.3f}, {sum(h == 1 for h in human)} of {len(human)} fully yes")

    columns: dict[str, list[float]] = {}
    timings: dict[str, float] = {}
    t = time.perf_counter()
    rouge = baselines.rouge_scores(refs, cands)
    timings["rouge"] = time.perf_counter() - t
    for key in rouge[0]:
        columns[key] = [row[key] for row in rouge]
    ok, message = baselines.embeddings_available()
    if ok:
        t = time.perf_counter()
        baselines._model()
        timings["embedding model load"] = time.perf_counter() - t
        for mode in ("sentence", "whole"):
            t = time.perf_counter()
            columns[f"minilm_{mode}"] = baselines.embedding_similarity(refs, cands, mode=mode) or []
            timings[f"minilm_{mode}"] = time.perf_counter() - t
    else:
        print(f"embedding baseline skipped: {message}")

    print(f"\n{'metric':<18} {'Pearson r [95% CI]':>22} {'Spearman rho':>22} {'Kendall tau-b':>22}")
    table = []
    for name, scores in columns.items():
        res = [stats.correlation(scores, human, m, n_boot=1000, seed=0) for m in stats.METHODS]
        print(f"{name:<18} " + " ".join(fmt(r) for r in res))
        table.append({"metric": name} | {m: fmt(r).strip() for m, r in zip(stats.METHODS, res, strict=True)})
    print(
        f"\n(n = {len(human)} summaries; the paper's Table 3, QAGS-CNN: ROUGE-2 0.459/0.418/0.333, "
        "ROUGE-L 0.357/0.324/0.254, BERTScore 0.576/0.505/0.399)"
    )
    print("\ntimings (235 pairs, CPU):")
    for name, secs in timings.items():
        print(f"  {name:<22} {secs:6.2f} s")
    figures = {
        "Krippendorff's alpha among the workers (nominal)": f"{a.alpha:.4f} [{a.ci_low:.4f}, {a.ci_high:.4f}]",
        f"correlation with the human score, {len(human)} summaries": table,
    } | {f"{name} s": secs for name, secs in timings.items()}
    record("baselines", "baselines_qags", figures, argv=["bench/baselines_qags.py", *argv], started=began)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
