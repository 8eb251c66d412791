"""ConsEval's human agreement rows (an extra of this app beside the paper's SC, IC and accuracy), worked by hand."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest

from services.conseval.analysis import _consensus, compute_rows, missing_summary
from services.conseval.study import GREEDY
from tests.conformance.test_formulas_conseval import GREEDY_ANSWERS, SAMPLES, _cfg, _five_point_ratings, _items, _rating

H1 = [1.0, 2.0, 4.0, 4.0, 5.0]
H2 = [2.0, 2.0, 3.0, 5.0, 5.0]


def _humans() -> pd.DataFrame:
    rows = [
        {"rater_id": r, "rater": name, "item_id": 10 + i, "scale": "5-P", "value": v}
        for r, (name, values) in enumerate((("h1", H1), ("h2", H2)))
        for i, v in enumerate(values)
    ]
    return pd.DataFrame(rows)


def test_human_agreement_and_the_model_against_the_human_consensus():
    """HUMAN: alpha among the human raters at the scale's level; HUMAN-MODEL: the model's answer (greedy, base
    prompt) against the humans' consensus, which is their mean on an interval scale."""
    rows = compute_rows(_cfg(granularities=["none", "short"]), _items(), _five_point_ratings(), _humans())
    human = [r for r in rows if r["kind"] == "HUMAN"]
    assert len(human) == 1 and human[0]["level"] == "interval" and human[0]["model"] == "humans"
    assert human[0]["value"] == pytest.approx(krippendorff.alpha(np.array([H1, H2]), level_of_measurement="interval"))
    assert (human[0]["criterion"], human[0]["scale"], human[0]["mode"]) == ("Harmlessness", "5-P", "-")
    assert (human[0]["method"], human[0]["granularity"]) == ("-", "-")
    vs = [r for r in rows if r["kind"] == "HUMAN-MODEL"]
    consensus = [(a + b) / 2 for a, b in zip(H1, H2, strict=True)]
    want = krippendorff.alpha(np.array([GREEDY_ANSWERS, consensus]), level_of_measurement="interval")
    assert len(vs) == 1 and vs[0]["value"] == pytest.approx(want)
    assert (vs[0]["model"], vs[0]["method"], vs[0]["granularity"], vs[0]["mode"]) == (
        "judge",
        "base",
        "short",
        "single",
    )
    assert vs[0]["n_raters"] == 2 and vs[0]["n"] == 5
    long_rows = compute_rows(_cfg(granularities=["short", "long"]), _items(), _five_point_ratings(), _humans())
    assert [r for r in long_rows if r["kind"] == "HUMAN-MODEL"][0]["granularity"] == "long"  # the long definition
    assert not [r for r in compute_rows(_cfg(), _items(), _five_point_ratings(), _humans()[:0]) if "HUMAN" in r["kind"]]
    other = _humans().assign(scale="7-P")
    assert not [r for r in compute_rows(_cfg(), _items(), _five_point_ratings(), other) if "HUMAN" in r["kind"]]


def test_consensus_by_level_of_measurement():
    """Interval: the mean; ordinal: the median; nominal: the value most gave, none on a tie; nothing: NaN."""
    assert _consensus(pd.Series([1.0, 2.0, 6.0]), "interval") == 3.0
    assert _consensus(pd.Series([1.0, 2.0, 6.0, np.nan]), "ordinal") == 2.0
    assert _consensus(pd.Series([1.0, 1.0, 0.0]), "nominal") == 1.0
    assert np.isnan(_consensus(pd.Series([1.0, 0.0]), "nominal"))
    assert _consensus(pd.Series([0.0, 0.0]), "nominal") == 0.0
    assert np.isnan(_consensus(pd.Series([np.nan]), "interval"))


def test_missing_summary_counts_the_unread_answers_with_examples():
    r = _five_point_ratings()
    r.loc[0, ["problem", "raw"]] = ["no number", "fine"]
    r.loc[0, "value"] = np.nan
    out = missing_summary(r.assign(method=["imported"] + ["base"] * (len(r) - 1)))
    assert out["answers"] == len(r) - 1 and out["missing"] == 1  # the imported row and its NaN are left out
    out = missing_summary(r)
    assert (out["answers"], out["missing"]) == (len(r), 2)
    assert out["examples"][0] == {"rater": "judge", "scale": "5-P", "raw": "fine", "problem": "no number"}


def test_rows_carry_their_keys_and_the_split_reports_on_the_held_out_fifth():
    rows = compute_rows(_cfg(), _items(), _five_point_ratings(), _humans()[:0])
    for kind in ("SC", "GS", "ACC"):
        row = [r for r in rows if r["kind"] == kind][0]
        assert (row["model"], row["method"], row["criterion"], row["granularity"]) == (
            "judge",
            "base",
            "Harmlessness",
            "short",
        )
    split = compute_rows(_cfg(methods=["base", "dicl_r"]), _items(), _five_point_ratings(), _humans()[:0])
    acc = [r for r in split if r["kind"] == "ACC" and r["method"] == "base"]
    assert acc and all(r["n"] <= 1 for r in acc)  # 20% of five items: one


def test_greedy_scores_are_only_the_greedy_answers():
    from services.conseval.analysis import score_table
    from services.conseval.study import GREEDY

    r = _five_point_ratings()
    assert score_table(r[r["sample"] != GREEDY], "greedy").empty


def test_accuracy_against_the_human_oracle_is_pearson_on_the_humans_mean():
    rows = compute_rows(_cfg(oracle="humans", n_boot=0), _items(), _five_point_ratings(), _humans())
    acc = [r for r in rows if r["kind"] == "ACC" and r["mode"] == "greedy"][0]
    means = [(a + b) / 2 for a, b in zip(H1, H2, strict=True)]
    assert acc["oracle"] == "humans" and acc["value"] == pytest.approx(np.corrcoef(GREEDY_ANSWERS, means)[0, 1])
    assert acc["ci_low"] is None and acc["ci_high"] is None  # n_boot = 0: no interval


def test_the_model_against_humans_row_reads_only_that_models_base_prompt_answers():
    """HUMAN-MODEL measures one evaluator, as section 6 ("we also evaluate the models on the alignment
    towards ...") measures each model on its own: that model's answers to the plain prompt, never a dICL
    answer (section 8.1.2's prompt with examples) nor another model's. The judge has no plain answer on the
    last item, only a dICL one, and another model has one: the judge's row pairs four items, not five."""
    from services.conseval.study import ModelSpec

    base = _five_point_ratings()
    base = base[base.item_id != 14]
    dicl = _five_point_ratings().assign(method="dicl_r")
    other = _five_point_ratings().assign(rater="other", value=lambda d: 6.0 - d.value)
    cfg = _cfg(models=[ModelSpec("judge"), ModelSpec("other")], methods=["base", "dicl_r"], split="leave-one-out")
    rows = compute_rows(cfg, _items(), pd.concat([base, dicl, other], ignore_index=True), _humans())
    judge = [r for r in rows if r["kind"] == "HUMAN-MODEL" and r["model"] == "judge"]
    consensus = [(a + b) / 2 for a, b in zip(H1, H2, strict=True)]
    want = krippendorff.alpha(np.array([GREEDY_ANSWERS[:4], consensus[:4]]), level_of_measurement="interval")
    assert len(judge) == 1 and judge[0]["method"] == "base"
    assert judge[0]["n"] == 4 and judge[0]["value"] == pytest.approx(want)
    mirrored = [6.0 - v for v in GREEDY_ANSWERS]  # the other model answers 6 - x on every item
    theirs = [r for r in rows if r["kind"] == "HUMAN-MODEL" and r["model"] == "other"][0]
    want = krippendorff.alpha(np.array([mirrored, consensus]), level_of_measurement="interval")
    assert theirs["n"] == 5 and theirs["value"] == pytest.approx(want)


def _kinds(rows: list[dict], kind: str) -> list[dict]:
    return [r for r in rows if r["kind"] == kind]


def test_every_row_carries_the_keys_that_name_it():
    """Each number says what it measures: the accuracy row has the alpha rows' keys (level None: a correlation),
    the IC row names its model, prompt, criterion and definition, the model-against-humans row its criterion
    and scale."""
    cfg = _cfg(scales=["5-P", "7-P", "11-P (POS)"], n_samples=0)
    rows = compute_rows(cfg, _items(), _ic_ratings(), _humans())
    acc = _kinds(rows, "ACC")[0]
    assert acc["level"] is None and "note" in acc and acc["stat"] != "alpha"
    ic = _kinds(rows, "IC1")[0]
    assert (ic["model"], ic["method"], ic["criterion"], ic["granularity"]) == ("judge", "base", "Harmlessness", "short")
    vs = _kinds(rows, "HUMAN-MODEL")[0]
    assert (vs["criterion"], vs["scale"]) == ("Harmlessness", "5-P")


def _ic_ratings() -> pd.DataFrame:
    five, seven = [1.0, 3.0, 5.0, 2.0, 4.0], [1.0, 7.0, 4.0, 2.0, 7.0]
    rows = [_rating(10 + i, "7-P", GREEDY, seven[i]) for i in range(5)]  # the 7-P answers first
    rows += [_rating(10 + i, "5-P", GREEDY, five[i]) for i in range(5)]
    rows += [_rating(10 + i, "11-P (POS)", GREEDY, 1.0 + 10 * (five[i] - 1) / 4) for i in range(5)]
    return pd.DataFrame(rows)


def test_the_model_against_humans_row_uses_the_long_definition_wherever_it_is_listed():
    """The long definition is the study's reference definition when it has one, first or last in the list."""
    rows = compute_rows(_cfg(granularities=["long", "short"]), _items(), _five_point_ratings(), _humans())
    assert _kinds(rows, "HUMAN-MODEL")[0]["granularity"] == "long"


def test_a_scale_without_human_ratings_does_not_stop_the_next_scales_rows():
    ratings = pd.concat([_five_point_ratings(), _five_point_ratings().assign(scale="7-P")], ignore_index=True)
    rows = compute_rows(_cfg(scales=["7-P", "5-P"]), _items(), ratings, _humans())  # humans rated 5-P only
    assert [r["scale"] for r in _kinds(rows, "HUMAN")] == ["5-P"]
    assert [r["scale"] for r in _kinds(rows, "HUMAN-MODEL")] == ["5-P"]


def test_intervals_follow_the_studys_bootstrap_setting_and_seed():
    """n_boot = 0: no interval on any alpha or correlation; n_boot > 0: the same seed gives the same interval."""
    plain = compute_rows(_cfg(n_boot=0), _items(), _five_point_ratings(), _humans())
    assert all(r["ci_low"] is None for r in plain if r["kind"] in ("SC", "HUMAN", "ACC"))
    a, b = (compute_rows(_cfg(n_boot=60, seed=5), _items(), _five_point_ratings(), _humans()) for _ in range(2))
    c = compute_rows(_cfg(n_boot=60, seed=6), _items(), _five_point_ratings(), _humans())
    for kind in ("SC", "ACC"):
        x, y, z = _kinds(a, kind)[0], _kinds(b, kind)[0], _kinds(c, kind)[0]
        assert x["ci_low"] is not None and (x["ci_low"], x["ci_high"]) == (y["ci_low"], y["ci_high"])
        assert (x["ci_low"], x["ci_high"]) != (z["ci_low"], z["ci_high"])  # the study's seed draws the resamples


def test_the_imported_oracle_is_used_even_when_there_are_human_ratings():
    rows = compute_rows(_cfg(oracle="imported"), _items(), _five_point_ratings(), _humans())
    assert {r["oracle"] for r in _kinds(rows, "ACC")} == {"imported"}


def test_self_consistency_needs_two_samples_and_gs_needs_a_greedy_answer():
    """Section 4: SC is alpha across the n samples, so n = 2 is enough; GS pairs the greedy answer with the
    first sample, so a study without greedy answers has no GS row and no greedy mode."""
    two = _five_point_ratings()
    two = two[two["sample"] < 2]
    sc = _kinds(compute_rows(_cfg(n_samples=2), _items(), two, _humans()[:0]), "SC")
    want = krippendorff.alpha(
        np.array([[s[0] for s in SAMPLES], [s[1] for s in SAMPLES]]), level_of_measurement="interval"
    )
    assert len(sc) == 1 and sc[0]["value"] == pytest.approx(want)
    sampled_only = _five_point_ratings()
    sampled_only = sampled_only[sampled_only["sample"] >= 0]
    rows = compute_rows(_cfg(greedy=False), _items(), sampled_only, _humans()[:0])
    assert not _kinds(rows, "GS") and "greedy" not in {r["mode"] for r in rows}


def test_greedy_against_the_first_sample_reads_only_the_rows_of_its_scale():
    rows = []
    for i in range(5):  # on 7-P the greedy answers and first samples are listed first, and disagree
        rows += [_rating(10 + i, "7-P", GREEDY, 7.0 - i), _rating(10 + i, "7-P", 0, 1.0 + i)]
    for i in range(5):  # on 5-P they agree
        rows += [_rating(10 + i, "5-P", GREEDY, 1.0 + i % 5), _rating(10 + i, "5-P", 0, 1.0 + i % 5)]
    rows += [_rating(10 + i, sk, s, 3.0) for i in range(5) for sk in ("5-P", "7-P") for s in (1, 2)]
    got = compute_rows(_cfg(scales=["7-P", "5-P"]), _items(), pd.DataFrame(rows), _humans()[:0])
    gs = {r["scale"]: r["value"] for r in _kinds(got, "GS")}
    assert gs["5-P"] == pytest.approx(1.0) and gs["7-P"] < 0


def test_missing_summary_shows_at_most_twenty_examples():
    r = _five_point_ratings()
    r = pd.concat([r] * 2, ignore_index=True).assign(value=np.nan, raw="?", problem="no number")
    out = missing_summary(r)
    assert out["missing"] == 40 and len(out["examples"]) == 20
