"""Fit and cross-validate the evidence checker's calibration and abstention (services/dcr/evidence/calibration.py).

Data: the QAGS-CNN/DM sentences with a majority label (../shared/data/qags_cnndm_mturk.jsonl, read where it is)
and the cases bench/evidence_cases.py builds by rule from its articles. The one-sentence abstractive
summaries (evidence_cases.HELD_OUT, XSum's style) are never fitted on: they test how the checker carries over.

Everything is out of fold, 5 folds grouped by article (the folds of bench/evidence_qags.py):
1. the raw score of each sentence comes from the score weights fitted without its fold (evidence_qags.fit);
2. the sentence calibrator (isotonic regression, scikit-learn; on QAGS-CNN sentences and the constructed
   cases) and the summary calibrator (sigmoid / Platt scaling of the logit of the mean sentence score,
   scikit-learn's LogisticRegression; on the QAGS-CNN summaries alone, whose mix of consistent and
   inconsistent summaries is a real one, unlike the constructed cases') are fitted on the other folds'
   out-of-fold scores and applied to the held-out fold;
3. the checker's abstention (calibration.abstain_reason) is applied with those held-out probabilities.

It prints: the expected calibration error (10 equal bins) per sentence and per summary, on QAGS-CNN, on the
constructed cases and on both; the risk-coverage figures (the checker's own abstention, and the curve of the
calibrated probability) on QAGS-CNN summaries, on the constructed abstractive summaries and on the held-out
one-sentence abstractive ones; and how often each abstention rule fires.

With --write it fits both calibrators on every out-of-fold score and writes them, with the cross-validated
reliability bins and figures, the date and the machine, to services/dcr/evidence/calibration.json.
Run: .venv/bin/python bench/evidence_calibration.py [PATH] [--write]
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import evidence_cases
import evidence_qags
from record import record, start

from services import stats
from services.dcr import evidence
from services.dcr.evidence import calibration
from services.stats import selective

FOLDS = evidence_qags.FOLDS
# The abstention settings (see calibration.py); chosen on the cross-validated figures this script prints.
BAND = (0.35, 0.65)
MIN_STYLE = 0.6
MERGED = 3
# The summary band is chosen for the best balanced accuracy on QAGS-CNN summaries among bands deciding at least
# this share of them (out of fold it then decides about 85-90%).
SUMMARY_COVERAGE = 0.88
BAND_GRID = np.round(np.arange(0.30, 0.7001, 0.01), 2)


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


def side(f_list, exact_v, exact_t):
    """What abstention reads of each sentence: the summary's style, how many sentences it merges, exact, hard."""
    style = np.array([se.features.style for f in f_list for se in f])
    merged = np.array([len(se.supporting) for f in f_list for se in f])
    hard = np.array([calibration.hard_evidence(se.features, evidence.MAX_NOVEL) for f in f_list for se in f])
    return style, merged, exact_v | exact_t, hard


def out_of_fold_scores(refs, sents, labels, cases) -> dict:
    """Every sentence's raw score from the weights fitted without its article's fold, and what abstention reads."""
    found = evidence.analyse_many(list(zip(refs, sents, strict=True)), embedder=evidence.lexical_only, noun="article")
    case_found = evidence_qags.analyse_cases(refs, cases, evidence.lexical_only)
    fs = evidence_qags.fold_scores(len(refs), found, case_found, labels, cases)
    folds, sq, yq, owner, vq, tq = fs.folds, fs.sq, fs.yq, fs.owner, fs.vq, fs.tq
    sc, yc, dc, vc, tc, kinds = fs.sc, fs.yc, fs.dc, fs.vc, fs.tc, fs.kinds

    style_q, merged_q, exact_q, hard_q = side(found, vq, tq)
    style_c, merged_c, exact_c, hard_c = side(case_found, vc, tc)
    groups = np.array([c.group if c.group >= 0 else -1 - i for i, c in enumerate(cases)])
    return {
        "folds": folds,
        "weights": fs.weights,
        "q": {
            "s": sq,
            "y": yq,
            "doc": owner,
            "summary": owner,
            "style": style_q,
            "merged": merged_q,
            "exact": exact_q,
            "hard": hard_q,
            "features": [se.features for f in found for se in f],
        },
        "c": {
            "s": sc,
            "y": yc,
            "doc": dc,
            "summary": groups,
            "style": style_c,
            "merged": merged_c,
            "exact": exact_c,
            "hard": hard_c,
            "kind": kinds,
        },
    }


def summaries(part: dict, rows: np.ndarray | None = None) -> dict:
    """Per summary: its sentences' mean raw score, its label (every sentence supported), its article, its rows."""
    idx = np.arange(len(part["s"])) if rows is None else np.flatnonzero(rows)
    out: dict[int, list[int]] = {}
    for i in idx:
        out.setdefault(int(part["summary"][i]), []).append(int(i))
    members = list(out.values())
    y = []
    for m in members:
        ys = part["y"][m]
        y.append(float(np.all(ys == 1)))  # a tie (NaN) is not a "yes"
    return {
        "members": members,
        "mean": np.array([part["s"][m].mean() for m in members]),
        "y": np.array(y),
        "doc": np.array([part["doc"][m[0]] for m in members]),
    }


# The sentence map is for real summaries: QAGS-CNN carries this share of the fitting weight, and the cases built
# by rule (ten times as many) the rest, filling score ranges QAGS-CNN has few sentences in. Pooled unweighted,
# the built cases set the map and QAGS-CNN's error rises to about 0.06; fitted on QAGS-CNN alone, the built
# cases' error rises to about 0.11.
REAL_SHARE = 0.85


def fit_sentence(s: np.ndarray, y: np.ndarray, real: np.ndarray) -> IsotonicRegression:
    """Isotonic map from raw score to P(supported); `real` marks the QAGS-CNN rows (weighted to REAL_SHARE)."""
    w = np.where(real, REAL_SHARE / max(real.sum(), 1), (1 - REAL_SHARE) / max((~real).sum(), 1))
    return IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(s, y, sample_weight=w * len(s))


def fit_summary(mean: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LogisticRegression(C=1e4).fit(_logit(mean).reshape(-1, 1), y)
    return float(m.intercept_[0]), float(m.coef_[0, 0])


def platt(mean: np.ndarray, a: float, b: float) -> np.ndarray:
    return 1 / (1 + np.exp(-(a + b * _logit(mean))))


def cross_validate(d: dict) -> dict:
    """Held-out sentence and summary probabilities for every row and summary (fitted on the other folds)."""
    folds, q, c = d["folds"], d["q"], d["c"]
    fit_rows_q = ~np.isnan(q["y"])
    fit_rows_c = ~np.isin(c["kind"], evidence_cases.HELD_OUT)
    sum_q, sum_c = summaries(q), summaries(c)
    pq, pc = np.zeros(len(q["s"])), np.zeros(len(c["s"]))
    psq, psc = np.zeros(len(sum_q["y"])), np.zeros(len(sum_c["y"]))
    platts, isos = [], []
    for k in range(FOLDS):
        tq, tc = folds[q["doc"]] != k, folds[c["doc"]] != k
        s_train = np.concatenate([q["s"][tq & fit_rows_q], c["s"][tc & fit_rows_c]])
        y_train = np.concatenate([q["y"][tq & fit_rows_q], c["y"][tc & fit_rows_c]])
        real = np.r_[np.ones((tq & fit_rows_q).sum(), bool), np.zeros((tc & fit_rows_c).sum(), bool)]
        iso = fit_sentence(s_train, y_train, real)
        isos.append(iso)
        pq[~tq], pc[~tc] = iso.predict(q["s"][~tq]), iso.predict(c["s"][~tc])
        uq = folds[sum_q["doc"]] != k
        a, b = fit_summary(sum_q["mean"][uq], sum_q["y"][uq])
        platts.append((a, b))
        hq, hc = folds[sum_q["doc"]] == k, folds[sum_c["doc"]] == k
        psq[hq], psc[hc] = platt(sum_q["mean"][hq], a, b), platt(sum_c["mean"][hc], a, b)
    return {"pq": pq, "pc": pc, "psq": psq, "psc": psc, "sum_q": sum_q, "sum_c": sum_c, "platts": platts, "isos": isos}


def decide(part: dict, p: np.ndarray, cal: calibration.Calibration) -> tuple[np.ndarray, list]:
    """Each sentence's verdict (1, 0, NaN undecided) and the rule that made it undecided (or None)."""
    verdict = np.where(p >= 0.5, 1.0, 0.0)
    rules = []
    for i in range(len(p)):
        why = calibration.abstain_reason(
            probability=float(p[i]),
            style=float(part["style"][i]),
            n_supporting=int(part["merged"][i]),
            exact=bool(part["exact"][i]),
            hard=bool(part["hard"][i]),
            cal=cal,
        )
        rule = None
        if why:
            rule = "reworded" if "reworded" in why else "merged" if "merges" in why else "band"
            verdict[i] = np.nan
        rules.append(rule)
    return verdict, rules


def summary_verdicts(members: list[list[int]], verdict: np.ndarray) -> np.ndarray:
    """The all-sentences rule: 0 when any sentence is inconsistent, 1 when every one is consistent, else NaN."""
    out = []
    for m in members:
        v = verdict[m]
        if (v == 0).any():
            out.append(0.0)
        elif (v == 1).all():
            out.append(1.0)
        else:
            out.append(np.nan)
    return np.array(out)


WORDS = {1.0: "consistent", 0.0: "inconsistent"}
CODES = {"consistent": 1.0, "inconsistent": 0.0, "unknown": np.nan}


def decide_summaries(
    part: dict, members: list[list[int]], verdict: np.ndarray, prob: np.ndarray, cal: calibration.Calibration
) -> np.ndarray:
    """Each summary's verdict (1, 0, NaN) by the checker's own rule (calibration.decide_summary)."""
    out = []
    for m, p in zip(members, prob, strict=True):
        words = [WORDS.get(float(v), "unknown") for v in verdict[m]]
        v, _ = calibration.decide_summary(words, float(p), style=float(part["style"][m[0]]), cal=cal)
        out.append(CODES[v])
    return np.array(out)


def band_verdicts(part: dict, members: list[list[int]], verdict: np.ndarray, prob: np.ndarray, bands) -> np.ndarray:
    """decide_summary for many candidate summary bands at once: an array (band, summary) of 1, 0, NaN."""
    rule = summary_verdicts(members, verdict)
    own = np.array([len(m) >= 2 and part["style"][m[0]] >= MIN_STYLE and not (verdict[m] == 0).any() for m in members])
    passed = np.array([bool((verdict[m] == 1).all()) for m in members])
    lo, hi = np.array(bands)[:, :1], np.array(bands)[:, 1:]
    by_band = np.where(prob >= hi, 1.0, np.where(prob < lo, 0.0, np.nan))
    by_band = np.where(passed, np.where(prob >= lo, 1.0, np.nan), by_band)
    return np.where(own, by_band, rule)


def _ba_decided(pred: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Balanced accuracy on the decided items (NaN without both classes) and the share decided, per row of pred."""
    pred = np.atleast_2d(pred)
    decided = ~np.isnan(pred)
    with np.errstate(invalid="ignore", divide="ignore"):
        r1 = ((pred == 1) & (y == 1)).sum(axis=1) / (decided & (y == 1)).sum(axis=1)
        r0 = ((pred == 0) & (y == 0)).sum(axis=1) / (decided & (y == 0)).sum(axis=1)
    return (r1 + r0) / 2, decided.mean(axis=1)


BANDS = [(lo, hi) for lo in BAND_GRID for hi in BAND_GRID if hi >= lo]


def choose_summary_band(part, members, verdict, prob, y, coverage: float) -> tuple[float, float]:
    """The summary band with the best balanced accuracy among those deciding at least `coverage` of the summaries
    (the widest coverage reachable when none does); ties go to the narrower band."""
    ba, cov = _ba_decided(band_verdicts(part, members, verdict, prob, BANDS), y)
    ok = cov >= min(coverage, cov.max() - 1e-9)
    ba = np.where(ok & np.isfinite(ba), ba, -1.0)
    best = np.flatnonzero(ba >= ba.max() - 1e-12)
    widths = [BANDS[i][1] - BANDS[i][0] for i in best]
    return BANDS[int(best[int(np.argmin(widths))])]


def cross_validate_summary(d: dict, cv: dict, vq: np.ndarray, vc: np.ndarray, coverage: float) -> dict:
    """Out-of-fold summary verdicts: for each fold, the band is chosen on the other folds' QAGS-CNN summaries
    (their probabilities from the summary map fitted on those folds) and applied to the held-out fold."""
    folds, q, c = d["folds"], d["q"], d["c"]
    sq, sc = cv["sum_q"], cv["sum_c"]
    fq, fc = folds[sq["doc"]], folds[sc["doc"]]
    pred_q, pred_c = np.full(len(sq["y"]), np.nan), np.full(len(sc["y"]), np.nan)
    bands = []
    for k, (a, b) in enumerate(cv["platts"]):
        train = fq != k
        p_train = platt(sq["mean"][train], a, b)
        members_train = [m for m, t in zip(sq["members"], train, strict=True) if t]
        band = choose_summary_band(q, members_train, vq, p_train, sq["y"][train], coverage)
        bands.append(band)
        cal = calibration.Calibration((0.0, 1.0), (0.0, 1.0), a, b, BAND, MIN_STYLE, MERGED, {}, band)
        for s, part, v, f, p, out in ((sq, q, vq, fq, cv["psq"], pred_q), (sc, c, vc, fc, cv["psc"], pred_c)):
            held = np.flatnonzero(f == k)
            out[held] = decide_summaries(part, [s["members"][i] for i in held], v, p[held], cal)
    return {"q": pred_q, "c": pred_c, "bands": bands}


def _ba_value(pred: np.ndarray, y: np.ndarray) -> float | None:
    keep = ~np.isnan(pred)
    ba = _ba_decided(pred[keep], y[keep])[0][0] if keep.any() else np.nan
    return round(100 * float(ba), 1) if np.isfinite(ba) else None


def _ba(pred: np.ndarray, y: np.ndarray) -> str:
    keep = ~np.isnan(pred)
    if not keep.any():
        return "n/a (nothing decided)"
    p, t = pred[keep], y[keep]
    ba = _ba_value(pred, y)
    lo, hi = stats.balanced_accuracy_interval(p, t, 0.5, n_boot=1000, seed=0)
    ci = f" [{100 * lo:.1f}, {100 * hi:.1f}]" if lo is not None else ""
    acc = float(np.mean(p == t))
    shown = "n/a (one class)" if ba is None else f"{ba:.1f}{ci}"
    return (
        f"balanced accuracy {shown}, accuracy {100 * acc:.1f} on {keep.mean():.0%} decided "
        f"({int(keep.sum())} of {len(y)})"
    )


def trade_off(d: dict, cv: dict, vq: np.ndarray, vc: np.ndarray) -> None:
    """Out-of-fold balanced accuracy against the share decided, the band chosen for each coverage in turn."""
    y = cv["sum_q"]["y"]
    cells = []
    for cov in (0.95, 0.92, 0.9, 0.88, 0.85, 0.8, 0.75, 0.7):
        pred = cross_validate_summary(d, cv, vq, vc, cov)["q"]
        cells.append(f"{cov:.0%}: {_ba_value(pred, y)} @ {np.mean(~np.isnan(pred)):.0%}")
    print("  trade-off on QAGS-CNN, band chosen (out of fold) to decide at least: " + "; ".join(cells))
    # The ceiling of this rule with these sentence scores: the band chosen on the very summaries it is scored on.
    a, b = fit_summary(cv["sum_q"]["mean"], y)
    p, members = platt(cv["sum_q"]["mean"], a, b), cv["sum_q"]["members"]
    cells = []
    for cov in (0.9, 0.85, 0.8):
        band = choose_summary_band(d["q"], members, vq, p, y, cov)
        pred = band_verdicts(d["q"], members, vq, p, [band])[0]
        cells.append(f"{_ba_value(pred, y)} @ {np.mean(~np.isnan(pred)):.0%}")
    print("  its ceiling, the band chosen on the test summaries themselves (in sample): " + "; ".join(cells))


def grouped_summaries(refs, cases, d: dict, cv: dict, bands: list, size: int = 3) -> None:
    """Multi-sentence CNN/DM-style summaries made of each article's one-sentence constructed cases: `size` supported
    ones, or one unsupported among `size` - 1 supported ones (as many of each), judged together and scored out of
    fold. Never fitted on: it shows how the summary rule and the all-sentences rule fare on longer summaries."""
    kinds = np.array([c.kind for c in cases])
    own = ~np.isin(kinds, (*evidence_cases.HELD_OUT, "abstract", "abstract-fact"))
    rng = np.random.default_rng(0)
    by_doc: dict[int, tuple[list[int], list[int]]] = {}
    for i in np.flatnonzero(own):
        by_doc.setdefault(cases[i].doc, ([], []))[cases[i].label == 1].append(int(i))
    groups = []
    for doc, (bad, good) in sorted(by_doc.items()):
        good = [int(i) for i in rng.permutation(good)]
        whole = [good[j : j + size] for j in range(0, len(good) - size + 1, size)]
        # as many summaries with one unsupported sentence among supported ones as wholly supported ones
        mixed = [
            [int(i) for i in rng.permutation([b, *rng.choice(good, size - 1, replace=False)])]
            for b in rng.permutation(bad)[: len(whole)]
        ]
        groups += [(doc, g) for g in whole + mixed]
    found = evidence.analyse_many(
        [(refs[doc], [cases[i].sentence for i in g]) for doc, g in groups], embedder=evidence.lexical_only
    )
    x, v, t = evidence_qags.features(found)
    doc = np.array([dd for (dd, g) in groups for _ in g])
    folds = d["folds"]
    s = evidence_qags.rules(evidence_qags.out_of_fold(x, doc, folds, d["weights"]), x, v, t)
    style, merged, exact, hard = side(found, v, t)
    part = {"style": style, "merged": merged, "exact": exact, "hard": hard}
    p = np.zeros(len(s))
    for k, iso in enumerate(cv["isos"]):
        p[folds[doc] == k] = iso.predict(s[folds[doc] == k])
    verdict, _ = decide(part, p, calibration.Calibration((0.0, 1.0), (0.0, 1.0), 0, 1, BAND, MIN_STYLE, MERGED, {}))
    starts = np.cumsum([0] + [len(g) for _, g in groups])
    members = [list(range(starts[i], starts[i + 1])) for i in range(len(groups))]
    y = np.array([float(all(cases[i].label == 1 for i in g)) for _, g in groups])
    sdoc = np.array([dd for dd, _ in groups])
    prob = np.zeros(len(groups))
    pred = np.full(len(groups), np.nan)
    for k, ((a, b), band) in enumerate(zip(cv["platts"], bands, strict=True)):
        m = np.flatnonzero(folds[sdoc] == k)
        prob[m] = platt(np.array([s[members[i]].mean() for i in m]), a, b)
        cal = calibration.Calibration((0.0, 1.0), (0.0, 1.0), a, b, BAND, MIN_STYLE, MERGED, {}, band)
        pred[m] = decide_summaries(part, [members[i] for i in m], verdict, prob[m], cal)
    print(f"  constructed CNN/DM-style, {size} sentences each ({len(y)} summaries, {int(y.sum())} consistent):")
    print(f"    its summary rule: {_ba(pred, y)}")
    print(f"    the all-sentences rule: {_ba(summary_verdicts(members, verdict), y)}")
    auc = evidence_qags.stats.auroc(prob, y, n_boot=0).auc
    print(f"    AUROC of the summary probability {auc:.3f}")


def missed(d: dict, cv: dict, pred: np.ndarray) -> None:
    """What the out-of-fold summary errors on QAGS-CNN hold: in a summary wrongly accepted, the sentences with a
    majority "no"; in one wrongly rejected, its least supported sentence by the checker."""
    q, s = d["q"], cv["sum_q"]
    for want, got, name in ((0.0, 1.0, "inconsistent called consistent"), (1.0, 0.0, "consistent called inconsistent")):
        rows = [i for i, (yy, pp) in enumerate(zip(s["y"], pred, strict=True)) if yy == want and pp == got]
        kinds: dict[str, int] = {}
        for i in rows:
            m = s["members"][i]
            # the sentences people rejected; in a summary wrongly rejected, the one the checker doubted most
            for j in [j for j in m if q["y"][j] == 0] if want == 0.0 else [m[int(np.argmin(cv["pq"][m]))]]:
                kinds[_kind(q["features"][j])] = kinds.get(_kind(q["features"][j]), 0) + 1
        counts = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))
        print(f"  {name}: {len(rows)} summaries; their sentences: {counts}")


def _kind(f) -> str:
    if f.numbers > 0:
        return "a new number"
    if f.names > 0:
        return "a new name"
    if f.contradiction > 0:
        return "a contradiction cue"
    if f.novel == 0:
        return "every word in the article (wrong attribution, merged or reordered facts)"
    return "new words of general vocabulary"


def report_selective(name: str, prob: np.ndarray, y: np.ndarray, decided_pred: np.ndarray) -> dict:
    rc = selective.risk_coverage(prob, y)
    rel = selective.reliability(prob, y)
    auc = evidence_qags.stats.auroc(prob, y, n_boot=0).auc
    print(f"  {name}: {_ba(decided_pred, y)}")
    cells = []
    for cov in (1.0, 0.9, 0.8, 0.5):
        pt = selective.at_coverage(rc, cov)
        if pt is not None:
            cells.append(f"{pt['coverage']:.0%}: {100 * pt['accuracy']:.1f}")
    print(f"    AUROC {auc:.3f}; ECE {rel.ece:.3f}; risk-coverage (accuracy at share decided) {', '.join(cells)}")
    print(f"    area under the risk-coverage curve {rc.aurc:.3f}")
    return {
        "n": int(rel.n),
        "ece": round(float(rel.ece), 4),
        "auroc": round(float(auc), 4) if auc is not None else None,
        "aurc": round(float(rc.aurc), 4),
    }


def main(argv: list[str]) -> int:
    write = "--write" in argv
    rest = [a for a in argv if not a.startswith("--")]
    path = Path(rest[0]) if rest else evidence_qags.DEFAULT_PATH
    if not path.is_file():
        print(f"skipped: {path} not found (the QAGS-CNN/DM MTurk file from shared/data)")
        return 0
    began, eces = start(), []
    refs, sents, labels = evidence_qags.load(path)
    cases = evidence_cases.build(refs)
    d = out_of_fold_scores(refs, sents, labels, cases)
    cv = cross_validate(d)
    q, c = d["q"], d["c"]
    lab = ~np.isnan(q["y"])
    fit_c = ~np.isin(c["kind"], evidence_cases.HELD_OUT)
    held = ~fit_c
    print(
        f"{path.name}: {len(refs)} summaries, {int(lab.sum())} labelled sentences; {len(cases)} constructed cases "
        f"({int(held.sum())} held-out one-sentence abstractive); {FOLDS} folds by article"
    )
    figures: dict = {}
    print("\nexpected calibration error (10 bins), cross-validated:")
    both_p = np.r_[cv["pq"][lab], cv["pc"][fit_c]]
    both_y = np.r_[q["y"][lab], c["y"][fit_c]]
    for name, p, y in (
        ("sentences, QAGS-CNN", cv["pq"][lab], q["y"][lab]),
        ("sentences, constructed (fitted kinds)", cv["pc"][fit_c], c["y"][fit_c]),
        ("sentences, both", both_p, both_y),
        ("sentences, held-out one-sentence abstractive", cv["pc"][held], c["y"][held]),
        ("summaries, QAGS-CNN", cv["psq"], cv["sum_q"]["y"]),
        ("summaries, constructed", cv["psc"], cv["sum_c"]["y"]),
    ):
        rel = selective.reliability(p, y)
        print(f"  {name:<48} ECE {rel.ece:.3f} (n = {rel.n})")
        eces.append({"what": name, "ECE": float(rel.ece), "n": rel.n})
    cal_cv = calibration.Calibration((0.0, 1.0), (0.0, 1.0), 0.0, 1.0, BAND, MIN_STYLE, MERGED, {})
    vq, rules_q = decide(q, cv["pq"], cal_cv)
    vc, rules_c = decide(c, cv["pc"], cal_cv)
    print(f"\nabstention (band {BAND}, reworded below {MIN_STYLE:.0%} word pairs kept, merged from {MERGED}):")
    for name, rules in (("QAGS-CNN sentences", rules_q), ("constructed sentences", rules_c)):
        counts = {r: sum(x == r for x in rules) for r in ("reworded", "merged", "band")}
        print(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + f" of {len(rules)}")

    print("\nsentence level (the checker's own decisions; then the curve of its calibrated probability):")
    figures["sentence_qags"] = report_selective("QAGS-CNN", cv["pq"][lab], q["y"][lab], vq[lab])
    figures["sentence_constructed"] = report_selective(
        "constructed, fitted kinds", cv["pc"][fit_c], c["y"][fit_c], vc[fit_c]
    )
    figures["sentence_held_out"] = report_selective(
        "held-out one-sentence abstractive", cv["pc"][held], c["y"][held], vc[held]
    )

    print(
        "\nsummary level (inconsistent when a sentence is; otherwise the summary probability with its band [lo, hi),"
        f" chosen on the other folds for the best balanced accuracy deciding at least {SUMMARY_COVERAGE:.0%}: with"
        " every sentence consistent, undecided below lo; else consistent from hi, inconsistent below lo; one-sentence"
        " and reworded summaries take their sentences' verdicts):"
    )
    scv = cross_validate_summary(d, cv, vq, vc, SUMMARY_COVERAGE)
    sq_pred, sc_pred = scv["q"], scv["c"]
    print("  bands chosen per fold: " + ", ".join(f"[{lo:.2f}, {hi:.2f})" for lo, hi in scv["bands"]))
    kinds_c = np.array([c["kind"][m[0]] for m in cv["sum_c"]["members"]])
    abstractive = np.isin(kinds_c, ("abstract", "abstract-fact"))
    headline = np.isin(kinds_c, evidence_cases.HELD_OUT)
    cnn_style = ~abstractive & ~headline
    figures["summary_qags"] = report_selective("QAGS-CNN", cv["psq"], cv["sum_q"]["y"], sq_pred)
    before = summary_verdicts(cv["sum_q"]["members"], vq)
    print(f"    (the all-sentences rule it replaces: {_ba(before, cv['sum_q']['y'])})")
    for key, name, m in (
        ("summary_constructed_extractive", "constructed CNN/DM-style (one sentence each)", cnn_style),
        ("summary_constructed_abstractive", "constructed abstractive (3 sentences)", abstractive),
        ("summary_held_out", "held-out one-sentence abstractive (XSum style)", headline),
    ):
        figures[key] = report_selective(name, cv["psc"][m], cv["sum_c"]["y"][m], sc_pred[m])
        figures[key]["decided"] = round(float(np.mean(~np.isnan(sc_pred[m]))), 4)
    figures["summary_qags"]["decided"] = round(float(np.mean(~np.isnan(sq_pred))), 4)
    figures["summary_qags"]["balanced_accuracy"] = _ba_value(sq_pred, cv["sum_q"]["y"])
    grouped_summaries(refs, cases, d, cv, scv["bands"])
    trade_off(d, cv, vq, vc)
    missed(d, cv, sq_pred)

    table = [
        {"set": key, **{k: v for k, v in vals.items() if not isinstance(v, dict | list)}}
        for key, vals in figures.items()
    ]
    out = {"expected calibration error (10 bins), cross-validated": eces, "selective figures, cross-validated": table}
    record("evidence", "evidence_calibration", out, argv=["bench/evidence_calibration.py", *argv], started=began)
    if write:
        s_all = np.concatenate([q["s"][lab], c["s"][fit_c]])
        iso = fit_sentence(s_all, both_y, np.r_[np.ones(int(lab.sum()), bool), np.zeros(int(fit_c.sum()), bool)])
        a, b = fit_summary(cv["sum_q"]["mean"], cv["sum_q"]["y"])
        summary_band = choose_summary_band(
            q, cv["sum_q"]["members"], vq, platt(cv["sum_q"]["mean"], a, b), cv["sum_q"]["y"], SUMMARY_COVERAGE
        )

        def bins(p, y):
            r = selective.reliability(p, y)
            return {
                "n": r.n,
                "ece": round(float(r.ece), 4),
                "bins": json.loads(r.bins.round(4).to_json(orient="records")),
            }

        cal = calibration.Calibration(
            sentence_x=tuple(round(float(v), 6) for v in iso.X_thresholds_),
            sentence_y=tuple(round(float(v), 6) for v in iso.y_thresholds_),
            summary_intercept=round(a, 6),
            summary_slope=round(b, 6),
            band=BAND,
            summary_band=summary_band,
            min_style=MIN_STYLE,
            merged=MERGED,
            info={
                "fitted": {
                    "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                    "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
                    "script": "bench/evidence_calibration.py --write",
                    "data": f"QAGS-CNN/DM ({len(refs)} summaries, {int(lab.sum())} labelled sentences) and "
                    f"{int(fit_c.sum())} cases built by rule (bench/evidence_cases.py)",
                    "checker": evidence.VERSION,
                },
                "cross_validated": {
                    "sentence": bins(both_p, both_y),
                    "sentence_qags": bins(cv["pq"][lab], q["y"][lab]),
                    "summary_qags": bins(cv["psq"], cv["sum_q"]["y"]),
                    "figures": figures,
                },
            },
        )
        calibration.CALIBRATION_PATH.write_text(json.dumps(cal.to_dict(), indent=1) + "\n", encoding="utf-8")
        print(
            f"\nwrote {calibration.CALIBRATION_PATH} ({len(cal.sentence_x)} isotonic knots; "
            f"summary a={a:.3f}, b={b:.3f}; summary band [{summary_band[0]:.2f}, {summary_band[1]:.2f}))"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
