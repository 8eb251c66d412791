"""ConsEval (paper 002): the numbers of sections 3-8 worked by hand, so a changed formula fails here.

Each expected value is computed in this file from the paper's definitions (Table 2's ranges, Table 3's Pearson
r, section 8.1.1's mean of five samples, Table 4's cases), never read back from the code under test.
"""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pandas as pd
import pytest

from db.models import ConsevalItem
from services.conseval import study
from services.conseval.analysis import compute_rows, score_table
from services.conseval.run import _Ctx, _examples
from services.conseval.scales import IC_CASES, SCALES
from services.conseval.study import GREEDY, TEST_SHARE, Call, ModelSpec, StudyConfig

ORACLE = [1.0, 2.0, 3.0, 4.0, 5.0]
GREEDY_ANSWERS = [1.0, 1.0, 2.0, 5.0, 5.0]
SAMPLES = [[1, 1, 1], [1, 2, 3], [3, 2, 1], [5, np.nan, 3], [5, 5, 5]]  # means 1, 2, 2, 4, 5 (NaN left out)


def _pearson(x: list[float], y: list[float]) -> float:
    mx, my = sum(x) / len(x), sum(y) / len(y)
    cov = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    return cov / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))


def _items(n: int = 5, criterion: str = "Harmlessness", scale: str = "5-P") -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "id": 10 + i,
                "study_id": 1,
                "idx": i,
                "criterion": criterion,
                "query": f"q{i}",
                "response": f"r{i}",
                "source_id": "",
                "oracle_score": ORACLE[i],
                "oracle_scale": scale,
            }
            for i in range(n)
        ]
    )


def _rating(item_id: int, scale: str, sample: int, value: float, method: str = "base") -> dict:
    return {
        "item_id": item_id,
        "rater": "judge",
        "method": method,
        "granularity": "short",
        "scale": scale,
        "sample": sample,
        "value": value,
        "raw": str(value),
        "problem": None,
    }


def _cfg(**kw) -> StudyConfig:
    base = dict(
        criteria=["Harmlessness"],
        scales=["5-P"],
        granularities=["short"],
        models=[ModelSpec("judge")],
        n_samples=3,
        greedy=True,
        methods=["base"],
        oracle="imported",
        n_boot=0,
    )
    return StudyConfig(**{**base, **kw})


def _five_point_ratings() -> pd.DataFrame:
    rows = []
    for i in range(5):
        rows.append(_rating(10 + i, "5-P", GREEDY, GREEDY_ANSWERS[i]))
        rows += [_rating(10 + i, "5-P", s, v) for s, v in enumerate(SAMPLES[i])]
    return pd.DataFrame(rows)


def _no_humans() -> pd.DataFrame:
    return pd.DataFrame(columns=["rater_id", "rater", "item_id", "scale", "value"])


def _row(rows: list[dict], **match) -> dict:
    found = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


# -- section 8.1.1: SCE is the mean of the sampled scores ---------------------------------------------
def test_section_8_1_1_sce_is_the_mean_of_the_samples_not_the_first_or_the_greedy():
    """Section 8.1.1: "We sample five scores with a temperature of 1.0 and average them to form a single score";
    the greedy answer is not one of the samples, and a sample with no readable score is left out of the mean."""
    sce = score_table(_five_point_ratings(), "sce")
    assert [sce[(10 + i, "5-P")] for i in range(5)] == [1.0, 2.0, 2.0, 4.0, 5.0]
    greedy = score_table(_five_point_ratings(), "greedy")
    assert [greedy[(10 + i, "5-P")] for i in range(5)] == GREEDY_ANSWERS
    sampled = score_table(_five_point_ratings(), "sampled")
    assert sampled[(13, 2, "5-P")] == 3.0 and len(sampled) == 15


def test_single_reads_the_greedy_answer_and_else_the_first_sample():
    """Results saved before greedy and sampled answers were kept apart: the greedy answer, else sample 0."""
    r = _five_point_ratings()
    assert score_table(r, "single")[(12, "5-P")] == 2.0  # the greedy answer (sample -1) comes first
    no_greedy = r[r["sample"] != GREEDY]
    assert score_table(no_greedy, "single")[(12, "5-P")] == 3.0  # sample 0


# -- Table 3: accuracy is Pearson's r against the oracle --------------------------------------------
def test_table_3_accuracy_is_pearson_r_of_greedy_and_of_sce_scores_against_the_oracle():
    """Table 3: accuracy is "calculated by Pearson Correlation" with the oracle; with SCE (Table 5) the score
    correlated is the mean of the samples. Pearson differs from Spearman on these scores, by hand."""
    rows = compute_rows(_cfg(), _items(), _five_point_ratings(), _no_humans())
    greedy = _row(rows, kind="ACC", mode="greedy", scale="5-P")
    sce = _row(rows, kind="ACC", mode="sce", scale="5-P")
    # greedy 1,1,2,5,5 vs 1..5: cov 12, var 10 and 16.8 -> 12 / sqrt(168); Spearman would be 9 / sqrt(90)
    assert greedy["stat"] == "pearson" and greedy["value"] == pytest.approx(12 / math.sqrt(168))
    assert greedy["value"] == pytest.approx(_pearson(ORACLE, GREEDY_ANSWERS))
    assert greedy["value"] != pytest.approx(9 / math.sqrt(90))
    # SCE means 1,2,2,4,5: cov 10, var 10 and 10.8 -> 10 / sqrt(108); the first samples 1,1,3,5,5 would differ
    assert sce["value"] == pytest.approx(10 / math.sqrt(108))
    assert sce["value"] != pytest.approx(_pearson(ORACLE, [1, 1, 3, 5, 5]))
    assert greedy["n"] == sce["n"] == 5 and greedy["n_raters"] == 2 and greedy["oracle"] == "imported"
    assert greedy["kind"] == "ACC" and greedy["model"] == "judge" and greedy["criterion"] == "Harmlessness"
    assert not [r for r in rows if r["kind"] == "ACC" and r["mode"] == "sampled"]  # one score per item


# -- sections 4 and 5: Krippendorff's alpha at the scale's level ------------------------------------
def test_section_4_self_consistency_is_alpha_over_the_samples_at_the_scales_level():
    """Section 4: SC is Krippendorff's alpha across the sampled scores (rows: samples, columns: items), at the
    level of measurement of Table 2: interval for the numeric scales."""
    rows = compute_rows(_cfg(), _items(), _five_point_ratings(), _no_humans())
    sc = _row(rows, kind="SC", scale="5-P")
    matrix = np.array(SAMPLES, dtype=float).T
    assert sc["level"] == "interval" and sc["mode"] == "sampled" and sc["stat"] == "alpha"
    assert sc["value"] == pytest.approx(krippendorff.alpha(matrix, level_of_measurement="interval"))
    for other in ("nominal", "ordinal", "ratio"):
        assert sc["value"] != pytest.approx(krippendorff.alpha(matrix, level_of_measurement=other))
    assert sc["n"] == 5 and sc["n_raters"] == 3
    boot = _row(compute_rows(_cfg(n_boot=40), _items(), _five_point_ratings(), _no_humans()), kind="SC", scale="5-P")
    assert (
        boot["ci_low"] <= boot["value"] <= boot["ci_high"]
        and boot["note"] == "Only 5 pairable units: the interval is rough."
    )
    gs = _row(rows, kind="GS", scale="5-P")  # extra: greedy against the first sample
    pair = np.array([GREEDY_ANSWERS, [s[0] for s in SAMPLES]], dtype=float)
    assert gs["value"] == pytest.approx(krippendorff.alpha(pair, level_of_measurement="interval"))


def test_table_2_levels_of_measurement_and_ranges():
    """Table 2: interval scales 5-P [1, 5], 7-P [1, 7], 10-P [1, 10], 11-P (POS) [1, 11], 11-P (NEG) [-5, 5]; the
    5-P Likert is ordinal, Binary {No, Yes} nominal. Each maps linearly onto [0, 1] for Inter-Consistency."""
    ranges = {"5-P": (1, 5), "7-P": (1, 7), "10-P": (1, 10), "11-P (POS)": (1, 11), "11-P (NEG)": (-5, 5)}
    for key, (lo, hi) in ranges.items():
        sc = SCALES[key]
        assert sc.level == "interval" and (sc.lo, sc.hi) == (lo, hi)
        assert sc.to_unit(lo) == 0.0 and sc.to_unit(hi) == 1.0
        assert sc.to_unit(lo + (hi - lo) / 2) == pytest.approx(0.5)
        assert sc.to_unit(None) is None and sc.to_unit(float("nan")) is None
        assert sc.choices() == [float(v) for v in range(lo, hi + 1)]
    assert SCALES["5-P Likert"].level == "ordinal" and SCALES["Binary"].level == "nominal"
    assert SCALES["5-P Likert"].labels[0] == "Strongly Disagree" and SCALES["5-P Likert"].labels[-1] == "Strongly Agree"
    assert SCALES["Binary"].to_unit(0) == 0.0 and SCALES["Binary"].to_unit(1) == 1.0  # No -> 0, Yes -> 1
    assert SCALES["Binary"].format(1) == "Yes" and SCALES["5-P Likert"].format(2) == "Disagree"
    assert SCALES["10-P"].to_unit(4) == pytest.approx(1 / 3)  # (4 - 1) / 9
    assert SCALES["11-P (NEG)"].to_unit(-3) == pytest.approx(0.2)  # (-3 + 5) / 10


def test_table_4_cases_and_the_case_3_and_case_4_mappings():
    """Table 4: Case 1 5-P/7-P/11-P, Case 2 5-P/5-P Likert, Case 3 11-P (+)/11-P (-), Case 4 Binary/10-P. IC is
    alpha between the scales' answers mapped onto [0, 1], at the interval level. Answers that mean the same
    on 11-P (+) and 11-P (-) (x and x - 6) agree perfectly; Binary Yes/No against 10-P's 10/1 too."""
    assert IC_CASES == {
        "IC1": ("5-P", "7-P", "11-P (POS)"),
        "IC2": ("5-P", "5-P Likert"),
        "IC3": ("11-P (POS)", "11-P (NEG)"),
        "IC4": ("Binary", "10-P"),
    }
    pos, binary = [1.0, 6.0, 11.0, 3.0, 8.0], [0.0, 1.0, 1.0, 0.0, 1.0]
    rows = []
    for i in range(5):
        rows.append(_rating(10 + i, "11-P (POS)", GREEDY, pos[i]))
        rows.append(_rating(10 + i, "11-P (NEG)", GREEDY, pos[i] - 6))
        rows.append(_rating(10 + i, "Binary", GREEDY, binary[i]))
        rows.append(_rating(10 + i, "10-P", GREEDY, 1.0 + 9 * binary[i]))
    cfg = _cfg(scales=["11-P (POS)", "11-P (NEG)", "Binary", "10-P"], n_samples=0, oracle="none")
    out = compute_rows(cfg, _items(), pd.DataFrame(rows), _no_humans())
    assert _row(out, kind="IC3", mode="greedy")["value"] == pytest.approx(1.0)
    assert _row(out, kind="IC4", mode="greedy")["value"] == pytest.approx(1.0)
    assert _row(out, kind="IC3", mode="greedy")["scale"] == "11-P (POS) / 11-P (NEG)"
    assert not [r for r in out if r["kind"] in ("IC1", "IC2")]  # their scales are not in the study


def test_section_5_inter_consistency_is_interval_alpha_on_the_mapped_scores():
    """Section 5: IC compares one item's answers on the scales of a case; on [0, 1] they are compared at the
    interval level (the same value means the same on every scale). Worked: 5-P and 7-P answers mapped."""
    five, seven = [1.0, 3.0, 5.0, 2.0, 4.0], [1.0, 7.0, 4.0, 2.0, 7.0]
    rows = []
    for i in range(5):
        rows.append(_rating(10 + i, "5-P", GREEDY, five[i]))
        rows.append(_rating(10 + i, "7-P", GREEDY, seven[i]))
        rows.append(_rating(10 + i, "11-P (POS)", GREEDY, 1.0 + 10 * (five[i] - 1) / 4))
    cfg = _cfg(scales=["5-P", "7-P", "11-P (POS)"], n_samples=0, oracle="none")
    ic1 = _row(compute_rows(cfg, _items(), pd.DataFrame(rows), _no_humans()), kind="IC1", mode="greedy")
    mapped = np.array(
        [[(v - 1) / 4 for v in five], [(v - 1) / 6 for v in seven], [(v - 1) / 4 for v in five]], dtype=float
    )
    assert ic1["level"] == "interval" and ic1["n"] == 5 and ic1["n_raters"] == 3
    assert ic1["value"] == pytest.approx(krippendorff.alpha(mapped, level_of_measurement="interval"))
    assert ic1["value"] != pytest.approx(krippendorff.alpha(mapped, level_of_measurement="ordinal"))


# -- section 7.1: the 8:2 split; section 8.1.2: dICL examples ----------------------------------------
def test_section_7_1_the_split_holds_out_a_fifth_of_each_criterion_seeded():
    """Section 7.1: "We split the original split dataset per criterion in an 8:2 split": 20% of each criterion's
    instances is held out (at least one), drawn with the study's seed; the split applies when dICL draws
    examples."""
    assert TEST_SHARE == 0.2
    items = [(i, "Harmlessness") for i in range(10)] + [(100 + i, "Factuality") for i in range(15)]
    cfg = _cfg(methods=["base", "dicl_r"], granularities=["short"], split="8:2", seed=3)
    test = study.test_instances(cfg, items)
    assert len({i for i, _ in test if i < 100}) == 2 and len({i for i, _ in test if i >= 100}) == 3
    shifted = study.test_instances(cfg, [(i + 1000, c) for i, c in items])
    assert shifted == {(i + 1000, g) for i, g in test}  # drawn by position in each criterion, not by id
    seeds = {frozenset(study.test_instances(_cfg(methods=["dicl_r"], seed=s), items)) for s in range(6)}
    assert len(seeds) > 1  # the seed draws the held-out part
    tiny = study.test_instances(cfg, [(1, "Harmlessness"), (2, "Harmlessness")])
    assert len(tiny) == 1  # round(0.4) = 0, but at least one instance is held out
    assert study.test_instances(_cfg(methods=["base"]), items) is None  # no dICL: nothing to hold out for
    assert study.test_instances(_cfg(methods=["dicl_r"], split="leave-one-out"), items) is None


def _ctx(pool: list[dict], test=None, k: int = 10) -> _Ctx:
    items = {
        i: ConsevalItem(id=i, study_id=1, idx=i, criterion="Harmlessness", query=f"q{i}", response=f"r{i}")
        for i in range(6)
    }
    items[5] = ConsevalItem(id=5, study_id=1, idx=5, criterion="Factuality", query="q5", response="r5")
    cfg = _cfg(methods=["dicl_r", "dicl_sm"], scales=["5-P", "7-P"], k=k, oracle="imported")
    return _Ctx(cfg=cfg, items=items, oracle_pool=pool, test=test)


def test_table_5_dicl_sm_draws_only_examples_on_the_targets_scale():
    """Table 5: "dICL_sm refers to sampling from examples with same target scale"; dICL_r samples any. Neither
    shows the target item itself, another criterion's item, or (under the split) a held-out instance."""
    pool = [
        {"item_id": 1, "scale": "5-P", "value": 4.0, "granularity": None},
        {"item_id": 2, "scale": "7-P", "value": 6.0, "granularity": None},
        {"item_id": 3, "scale": "5-P", "value": 2.0, "granularity": None},
        {"item_id": 0, "scale": "5-P", "value": 5.0, "granularity": None},  # the target itself
        {"item_id": 5, "scale": "5-P", "value": 1.0, "granularity": None},  # another criterion
        {"item_id": 4, "scale": "5-P", "value": 3.0, "granularity": "long"},  # another definition
    ]
    ctx = _ctx(pool)
    sm = _examples(ctx, Call(0, "judge", "dicl_sm", "short", "5-P", GREEDY))
    assert sorted((e["query"], e["answer"]) for e in sm) == [("q1", "4"), ("q3", "2")]
    assert all(e["options"] == "1-5" and e["response"] in ("r1", "r3") for e in sm)
    r = _examples(ctx, Call(0, "judge", "dicl_r", "short", "5-P", GREEDY))
    assert sorted(e["query"] for e in r) == ["q1", "q2", "q3"]
    assert {e["answer"] for e in r if e["query"] == "q2"} == {"6"} and {e["options"] for e in r} == {"1-5", "1-7"}
    held = _examples(_ctx(pool, test={(3, "short")}), Call(0, "judge", "dicl_sm", "short", "5-P", GREEDY))
    assert [e["query"] for e in held] == ["q1"]  # item 3 is in the 20%
    assert _examples(ctx, Call(0, "judge", "dicl_sm", "short", "10-P", GREEDY)) is None  # nothing on that scale


def test_section_8_1_2_k_examples_are_drawn_and_the_draw_is_stable():
    """dICL shows k oracle evaluations; the draw is seeded per call, so a prompt (and its cache entry) repeats."""
    pool = [{"item_id": i, "scale": "5-P", "value": float(i), "granularity": None} for i in range(1, 5)]
    ctx = _ctx(pool, k=2)
    call = Call(0, "judge", "dicl_r", "short", "5-P", GREEDY)
    first = _examples(ctx, call)
    assert len(first) == 2 and first == _examples(ctx, call)
    draws = {
        tuple(e["query"] for e in _examples(ctx, Call(0, "judge", "dicl_r", "short", "5-P", s))) for s in range(-1, 2)
    }
    assert len(draws) == 1  # the sample index does not change the examples an item is shown
    assert len(_examples(_ctx(pool, k=10), call)) == 4  # fewer than k in the pool: all of them
