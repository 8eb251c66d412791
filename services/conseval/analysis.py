"""The results of a study: SC, IC, GS and accuracy alphas and correlations, and human agreement."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db import conseval as q
from db.engine import get_session
from services import stats
from services.conseval.raters import human_ratings_frame
from services.conseval.scales import IC_CASES, SCALES
from services.conseval.store import get_study, items_frame, ratings_frame
from services.conseval.study import GREEDY, IMPORTED, StudyConfig, test_instances


def _alpha_row(kind: str, matrix: np.ndarray, level: str, cfg: StudyConfig, **keys: Any) -> dict[str, Any]:
    res = stats.krippendorff_alpha(matrix, level, n_boot=cfg.n_boot, seed=cfg.seed)  # type: ignore[arg-type]
    return {
        "kind": kind,
        "stat": "alpha",
        "value": res.alpha,
        "ci_low": res.ci_low,
        "ci_high": res.ci_high,
        "n": res.n_pairable,
        "n_raters": res.n_raters,
        "level": level,
        "note": res.note,
        **keys,
    }


def score_table(r: pd.DataFrame, mode: str) -> pd.Series:
    """The scores of one decoding: per (item, scale) the greedy answer ('greedy') or the mean of the samples
    ('sce'; missing answers left out, all missing gives NaN); per (item, sample, scale) every sampled answer
    ('sampled'). 'single' (results saved before the decodings were apart): the greedy answer, else the first."""
    if mode == "sce":
        s = r[r["sample"] >= 0]
        return s.groupby(["item_id", "scale"])["value"].mean()
    if mode == "sampled":
        return r[r["sample"] >= 0].set_index(["item_id", "sample", "scale"])["value"]
    if mode == "greedy":
        return r[r["sample"] == GREEDY].set_index(["item_id", "scale"])["value"]
    first = r.sort_values("sample").drop_duplicates(["item_id", "scale"], keep="first")
    return first.set_index(["item_id", "scale"])["value"]


def _mapped(scores: pd.Series) -> pd.Series:
    return pd.Series(
        [SCALES[k[-1]].to_unit(v) if pd.notna(v) else np.nan for k, v in scores.items()],
        index=scores.index,
        dtype=float,
    )


def analyse(engine: Engine, study_id: int) -> dict[str, Any]:
    """Every alpha and correlation of a study, as rows for tables and figures (JSON-ready)."""
    st = get_study(engine, study_id)
    assert st is not None
    cfg = StudyConfig.from_dict(st.config)
    items = items_frame(engine, study_id)
    ratings = ratings_frame(engine, study_id)
    humans = human_ratings_frame(engine, study_id)
    return {"rows": compute_rows(cfg, items, ratings, humans), "missing": missing_summary(ratings)}


def missing_summary(ratings: pd.DataFrame) -> dict[str, Any]:
    ratings = ratings[ratings.method != IMPORTED]
    miss = ratings[ratings.value.isna()]
    examples = miss.head(20)[["rater", "scale", "raw", "problem"]].to_dict("records")
    return {"answers": int(len(ratings)), "missing": int(len(miss)), "examples": examples}


def compute_rows(
    cfg: StudyConfig, items: pd.DataFrame, ratings: pd.DataFrame, humans: pd.DataFrame
) -> list[dict[str, Any]]:
    """SC, IC1-4 (greedy, sampled, SCE apart), GS (extra) and accuracy per oracle, per model, method, criterion and
    definition (on the 20% under the 8:2 split); human agreement per criterion and scale."""
    rows: list[dict[str, Any]] = []
    items = items.sort_values("idx")
    crit_of = dict(zip(items.id, items.criterion, strict=False))
    ratings = ratings.assign(criterion=ratings.item_id.map(crit_of))
    oracles = _oracle_scores(cfg, items, ratings, humans)
    test = test_instances(cfg, zip(items.id, items.criterion, strict=True))
    for model in [m.label for m in cfg.models]:
        for method in cfg.methods:
            for crit in cfg.criteria:
                for gran in cfg.granularities:
                    ids = [i for i in items.id[items.criterion == crit] if test is None or (i, gran) in test]
                    r = ratings[
                        (ratings.rater == model)
                        & (ratings.method == method)
                        & (ratings.criterion == crit)
                        & (ratings.granularity == gran)
                        & ratings.item_id.isin(ids)
                    ]
                    keys = dict(model=model, method=method, criterion=crit, granularity=gran)
                    rows += _scale_rows(cfg, r, ids, keys)
                    for mode in _modes(cfg):
                        scores = _mapped(score_table(r, mode)) if len(r) else pd.Series(dtype=float)
                        for case, case_scales in IC_CASES.items():
                            if not set(case_scales) <= set(cfg.scales):
                                continue
                            sampled = mode == "sampled" and len(scores)
                            units = sorted(set(scores.index.droplevel("scale"))) if sampled else ids
                            mat = np.array(
                                [[scores.get((*_unit(u), sk), np.nan) for u in units] for sk in case_scales],
                                dtype=float,
                            )
                            rows.append(
                                _alpha_row(case, mat, "interval", cfg, scale=" / ".join(case_scales), mode=mode, **keys)
                            )
                        if mode == "sampled":
                            continue  # accuracy compares one score per item: the greedy answer or SCE
                        for name, oracle in oracles.items():
                            for sk in cfg.scales:
                                rows.append(_accuracy_row(scores, oracle, ids, sk, gran, cfg, name, mode=mode, **keys))
    rows += _human_rows(cfg, items, ratings, humans)
    return [r for r in rows if r is not None]


def _modes(cfg: StudyConfig) -> list[str]:
    """The decodings a study has answers for: greedy, sampled (n >= 2) and their mean, SCE (n >= 2)."""
    out = ["greedy"] if cfg.greedy else []
    if cfg.n_samples >= 2:
        out += ["sampled", "sce"]
    elif cfg.n_samples == 1 and not cfg.greedy:
        out.append("sampled")
    return out


def _unit(u: Any) -> tuple:
    return u if isinstance(u, tuple) else (u,)


def _scale_rows(cfg: StudyConfig, r: pd.DataFrame, ids: list, keys: dict[str, Any]) -> list[dict[str, Any]]:
    """Per scale: self-consistency across the n samples, and the extra greedy-vs-sampled alpha (GS)."""
    rows = []
    for sk in cfg.scales:
        level = SCALES[sk].level
        if cfg.n_samples >= 2:
            s = r[(r.scale == sk) & (r["sample"] >= 0)]
            mat = s.pivot_table(index="sample", columns="item_id", values="value", aggfunc="first", dropna=False)
            mat = mat.reindex(index=range(cfg.n_samples), columns=ids)
            rows.append(_alpha_row("SC", mat.to_numpy(dtype=float), level, cfg, scale=sk, mode="sampled", **keys))
        if cfg.greedy and cfg.n_samples >= 1:
            g = r[(r.scale == sk) & (r["sample"].isin([GREEDY, 0]))]
            mat = g.pivot_table(index="sample", columns="item_id", values="value", aggfunc="first", dropna=False)
            mat = mat.reindex(index=[GREEDY, 0], columns=ids)
            rows.append(_alpha_row("GS", mat.to_numpy(dtype=float), level, cfg, scale=sk, mode="extra", **keys))
    return rows


def _oracle_scores(cfg: StudyConfig, items: pd.DataFrame, ratings: pd.DataFrame, humans: pd.DataFrame) -> dict:
    """Per oracle (its name): (item, scale, granularity or None) -> the oracle's score mapped onto [0, 1]."""
    out: dict[str, dict[tuple, float]] = {}
    if cfg.oracle == "endpoint":
        for spec in cfg.oracles():
            o = ratings[(ratings.rater == cfg.oracle_rater(spec)) & ratings.value.notna()]
            out[spec.label] = {
                (r.item_id, r.scale, r.granularity): SCALES[r.scale].to_unit(r.value) for r in o.itertuples()
            }
    elif cfg.oracle == "humans" and len(humans):
        means = humans.groupby(["item_id", "scale"])["value"].mean()
        out["humans"] = {(item, sk, None): SCALES[sk].to_unit(v) for (item, sk), v in means.items() if sk in SCALES}
    elif cfg.oracle == "imported":
        # a score on one scale is compared, mapped onto [0, 1], with every scale
        got = {
            (r.id, sk, None): SCALES[r.oracle_scale].to_unit(r.oracle_score)
            for r in items[items.oracle_score.notna()].itertuples()
            for sk in cfg.scales
        }
        if got:
            out["imported"] = got
        more = ratings[(ratings.method == IMPORTED) & ratings.value.notna()]
        for rater, g in more.groupby("rater", sort=True):
            out[str(rater).split(":", 1)[1]] = {
                (r.item_id, sk, None): SCALES[r.scale].to_unit(r.value) for r in g.itertuples() for sk in cfg.scales
            }
    return out


def _accuracy_row(scores, oracle, ids, sk, gran, cfg, name, **keys) -> dict[str, Any] | None:
    x, y = [], []
    for i in ids:
        o = oracle.get((i, sk, gran), oracle.get((i, sk, None)))
        x.append(scores.get((i, sk), np.nan))
        y.append(np.nan if o is None else o)
    res = stats.correlation(x, y, "pearson", n_boot=cfg.n_boot, seed=cfg.seed)
    return {
        "kind": "ACC",
        "stat": "pearson",
        "value": res.r,
        "ci_low": res.ci_low,
        "ci_high": res.ci_high,
        "n": res.n,
        "n_raters": 2,
        "level": None,
        "note": res.note,
        "scale": sk,
        "oracle": name,
        **keys,
    }


def _consensus(values: pd.Series, level: str) -> float:
    v = values.dropna()
    if v.empty:
        return np.nan
    if level == "interval":
        return float(v.mean())
    if level == "ordinal":
        return float(np.median(v))
    counts = v.value_counts()
    return float(counts.index[0]) if len(counts) == 1 or counts.iloc[0] > counts.iloc[1] else np.nan


def _human_rows(cfg: StudyConfig, items: pd.DataFrame, ratings: pd.DataFrame, humans: pd.DataFrame) -> list[dict]:
    if humans.empty:
        return []
    rows = []
    crit_of = dict(zip(items.id, items.criterion, strict=False))
    humans = humans.assign(criterion=humans.item_id.map(crit_of))
    gran = "long" if "long" in cfg.granularities else cfg.granularities[-1]
    for crit in cfg.criteria:
        ids = items.id[items.criterion == crit].tolist()
        for sk in cfg.scales:
            h = humans[(humans.criterion == crit) & (humans.scale == sk)]
            if h.empty:
                continue
            level = SCALES[sk].level
            mat = h.pivot_table(index="rater", columns="item_id", values="value", aggfunc="first").reindex(columns=ids)
            rows.append(
                _alpha_row(
                    "HUMAN",
                    mat.to_numpy(dtype=float),
                    level,
                    cfg,
                    model="humans",
                    method="-",
                    criterion=crit,
                    granularity="-",
                    scale=sk,
                    mode="-",
                )
            )
            cons = h.groupby("item_id")["value"].apply(lambda v, lv=level: _consensus(v, lv))
            for model in [m.label for m in cfg.models]:
                r = ratings[
                    (ratings.rater == model)
                    & (ratings.method == "base")
                    & (ratings.criterion == crit)
                    & (ratings.granularity == gran)
                    & (ratings.scale == sk)
                ]
                single = score_table(r, "single") if len(r) else pd.Series(dtype=float)
                mat = np.array(
                    [[single.get((i, sk), np.nan) for i in ids], [cons.get(i, np.nan) for i in ids]], dtype=float
                )
                rows.append(
                    _alpha_row(
                        "HUMAN-MODEL",
                        mat,
                        level,
                        cfg,
                        model=model,
                        method="base",
                        criterion=crit,
                        granularity=gran,
                        scale=sk,
                        mode="single",
                    )
                )
    return rows


def refresh_results(engine: Engine, study_id: int) -> None:
    """Recompute a finished study's results (e.g. after new human ratings)."""
    results = analyse(engine, study_id)
    with get_session(engine) as session:
        q.save_results(session=session, study_id=study_id, results=results)
