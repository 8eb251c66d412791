"""Survivors of a sampled mutation run of services/judges, killed against what the functions promise: the level
asked for, the counts an estimate reports, its JSON, the cost's JSON, the messages, whose results a card links
to, and that the annotators-only view hides every imported label."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats as sps

from services.judges import data, estimate, links
from services.judges.card import Cost
from tests.support.judges import labelled_dataset

agreement = importlib.import_module("services.judges.agreement")  # the package exports a function of that name


def test_the_classical_rate_is_at_the_level_asked_for():
    """Clopper-Pearson of the labels at 1 - alpha, as scipy's exact binomial interval gives it."""
    y = np.array([1.0] * 9 + [0.0] * 31)
    rng = np.random.default_rng(0)
    got = estimate.rates(y, y * 0.8 + 0.1, rng.random(400), alpha=0.2).classical
    want = sps.binomtest(9, 40).proportion_ci(0.8, method="exact")
    assert (got.ci_low, got.ci_high) == pytest.approx((want.low, want.high), abs=1e-9)


def test_a_fallback_to_the_labels_still_reports_the_unlabelled_items_and_lambda_0():
    y = np.array([1.0] * 38 + [0.0] * 2)  # 2 inconsistent labels: too rare for PPI's level
    got = estimate.ppi(y, y.copy(), np.ones(500))
    assert (got.n, got.n_unlabelled, got.lam, got.method) == (40, 500, 0.0, "exact")
    assert got.note.startswith("Only 2 of the 40 labels say inconsistent")
    assert got.as_dict()["lambda"] == 0.0 and got.as_dict()["n_unlabelled"] == 500


def test_equal_human_scores_fall_back_with_the_reason():
    y = np.full(40, 0.6)  # scores, not labels, and all the same
    got = estimate.ppi(y, np.linspace(0, 1, 40), np.full(300, 0.5))
    assert got.estimate == pytest.approx(0.6) and got.ci_low is None and got.n_unlabelled == 300
    assert got.note == "All 40 human scores are equal: there is no spread to build an interval from."


def test_an_estimate_without_lambda_leaves_lambda_out_of_its_json():
    plain = estimate.Estimate(0.3, 0.2, 0.4, 40, method="exact").as_dict()
    assert "lambda" not in plain and "n_unlabelled" not in plain
    tuned = estimate.Estimate(0.3, 0.25, 0.35, 40, 900, 0.7, method="ppi++").as_dict()
    assert (tuned["lambda"], tuned["n_unlabelled"]) == (0.7, 900)


def test_the_costs_json_names_its_tokens_and_seconds_to_the_millisecond():
    cost = Cost(n_items=4, calls=8, cache_hits=1, prompt_tokens=1200, completion_tokens=340, seconds=12.34567)
    got = cost.as_dict()
    assert (got["prompt_tokens"], got["completion_tokens"], got["seconds"]) == (1200, 340, 12.346)


def test_balanced_accuracy_says_what_it_needs():
    m = agreement.balanced_accuracy(np.array([1, 1, 0]), np.array([1, 1, 0]), ci=0.95)
    assert m.value is None and m.note.startswith("Balanced accuracy needs at least ")


def test_the_dhp_link_is_this_models_finished_run(monkeypatch):
    from services.dhp import benchmark

    runs = [
        SimpleNamespace(id=1, status="done", model="other-model"),
        SimpleNamespace(id=2, status="running", model="judge-model"),
        SimpleNamespace(id=3, status="done", model="judge-model"),
    ]
    monkeypatch.setattr(benchmark, "runs", lambda engine: runs)
    monkeypatch.setattr(
        benchmark, "discernment_of", lambda engine, rid: SimpleNamespace(d_avg=float(rid), perturbations=[0] * rid)
    )
    (link,) = links._dhp(None, "judge-model")
    assert (link.ref_id, link.value, link.n) == (3, 3.0, 3)


def test_a_conseval_study_without_rows_links_nothing(monkeypatch):
    from services import conseval

    study = SimpleNamespace(id=5, status="done", results={"summary": {}}, config={"models": []})
    monkeypatch.setattr(conseval, "list_studies", lambda engine: [study])
    assert links._conseval(None, "judge-model") == []


def test_the_annotators_view_hides_every_imported_label(engine):
    ds = labelled_dataset(engine, 30, n_labelled=20)
    every = data.human_frame(engine, ds)
    assert (every["source"] == "imported").sum() == 20
    mine = data.human_frame(engine, ds, source="annotators")
    assert (mine["source"] == "").all() and mine["label"].isna().all() and (mine["origin"] == "").all()


def test_lambda_0_asks_for_the_labels_alone():
    y = np.array([1.0] * 25 + [0.0] * 15)
    got = estimate.ppi(y, np.linspace(0, 1, 40), np.full(200, 0.9), lam=0)
    want = sps.binomtest(25, 40).proportion_ci(0.95, method="exact")
    assert (got.lam, got.n_unlabelled, got.method) == (0.0, 200, "exact")
    assert (got.ci_low, got.ci_high) == pytest.approx((want.low, want.high), abs=1e-9)


def test_a_score_column_is_read_over_its_own_dataset_and_finished_batches_are_candidates(engine):
    from services import judges
    from services.judges import panels, systems
    from tests.support.judges import add_judge

    ds = labelled_dataset(engine, 12, n_labelled=6)
    rows = "".join(f'{{"id": "x{i}", "p": {i / 11}}}\n' for i in range(12))
    col = judges.import_column(engine, ds, name="t", data=rows.encode(), filename="s.jsonl", score_column="p")
    frame = systems.judge_items(engine, ds, col.name)
    assert frame["score"].to_numpy() == pytest.approx([i / 11 for i in range(12)])
    done = add_judge(engine, ds, [0.5] * 12)
    assert [b.id for b in panels.candidate_batches(engine, ds)] == [done]


def test_kappa_says_what_it_needs():
    m = agreement._kappa(np.array([1, 1, 0]), np.array([1, 1, 0]), ci=0.95)
    assert m.value is None and m.note.startswith("Kappa needs at least ")


def test_four_repeated_ids_show_three_and_one_more(engine):
    from services import judges
    from services.errors import InputError

    ds = labelled_dataset(engine, 12)
    rows = "".join(f'{{"id": "x{i}", "p": 0.5}}\n' for i in (0, 1, 2, 3, 0, 1, 2, 3))
    with pytest.raises(InputError, match=r"'x2' on rows 3, 7 \(and 1 more\)\. Give each item one row\.$"):
        judges.import_column(engine, ds, name="t", data=rows.encode(), filename="s.jsonl", score_column="p")


def test_ppi_plus_plus_reports_the_lambda_it_tuned():
    rng = np.random.default_rng(2)
    y = (rng.random(60) < 0.4).astype(float)
    yhat = np.clip(y * 0.7 + rng.normal(0.15, 0.1, 60), 0, 1)
    unl = np.clip(rng.normal(0.45, 0.3, 2000), 0, 1)
    got = estimate.ppi(y, yhat, unl)
    assert got.method == "ppi++" and got.lam is not None and 0.0 < got.lam <= 1.5
    assert got.as_dict()["lambda"] == got.lam
    # the point is mean(y) + lambda * (mean of the unlabelled predictions - mean of the labelled ones)
    assert got.estimate == pytest.approx(y.mean() + got.lam * (unl.mean() - yhat.mean()), abs=1e-4)


def test_a_conseval_study_links_the_models_self_and_inter_consistency(monkeypatch):
    from services import conseval

    rows = [
        {"model": "A", "kind": "SC", "value": 0.81, "n": 30, "ci_low": 0.7, "ci_high": 0.9, "method": "base"},
        {"model": "A", "kind": "IC1", "value": 0.62, "n": 28, "ci_low": 0.5, "ci_high": 0.75, "method": "base"},
        {"model": "B", "kind": "SC", "value": 0.1, "n": 30, "ci_low": 0.0, "ci_high": 0.2, "method": "base"},
    ]
    study = SimpleNamespace(
        id=9,
        status="done",
        results={"rows": rows},
        config={"models": [{"label": "A", "model": "judge-model"}, {"label": "B", "model": "other"}]},
    )
    monkeypatch.setattr(conseval, "list_studies", lambda engine: [study])
    got = links._conseval(None, "judge-model")
    assert [(x.what, x.ref_id, x.value, x.n, x.ci_low, x.ci_high) for x in got] == [
        ("ConsEval self-consistency alpha", 9, 0.81, 30, 0.7, 0.9),
        ("ConsEval inter-consistency alpha", 9, 0.62, 28, 0.5, 0.75),
    ]


def test_a_comparison_with_a_label_budget_uses_that_many_labels(engine):
    from services.judges import systems
    from tests.support.systems import systems_dataset

    ds, batch = systems_dataset(engine, {"old": 0.5, "new": 0.95}, n_refs=60, n_labelled=30)
    full = systems.compare_dataset(engine, ds, batch)
    some = systems.compare_dataset(engine, ds, batch, budget=20, seed=1)
    assert sum(s.n_labelled for s in full.systems) == 60 and sum(s.n_labelled for s in some.systems) == 20


def test_a_difference_where_ppi_leaves_lambda_to_ppi_py_uses_the_labels_exact_interval():
    """When the labelled and unlabelled predictions have the same mean, PPI++'s point does not depend on lambda
    and none is read back; the difference then takes the labels' exact interval, as for lambda 0."""
    from services.judges import compare
    from services.stats import binomial

    y = np.array([1.0, 0.0] * 20)
    yhat = np.array([0.8, 0.2] * 20)  # informative, mean 0.5
    got = compare.for_difference(y, yhat, np.full(100, 0.5), alpha=0.05)
    assert (got.ci_low, got.ci_high) == binomial.clopper_pearson(20, 40, 0.95)


def test_newcombes_auroc_interval_ends_at_exactly_0_and_1_at_a_perfect_ranking():
    lo, hi = agreement.auroc_interval(1.0, 10, 12, ci=0.95)
    assert hi == 1.0 and 0.5 < lo < 1.0
    lo, hi = agreement.auroc_interval(0.0, 10, 12, ci=0.95)
    assert lo == 0.0 and 0.0 < hi < 0.5


def test_an_agreement_numbers_json_keeps_its_note():
    got = agreement.Metric(None, 3, note="AUROC needs more labels.").as_dict()
    assert got == {"value": None, "ci": [None, None], "n": 3, "note": "AUROC needs more labels."}


def test_a_column_name_may_take_the_whole_limit(engine):
    from services import judges
    from services.errors import InputError
    from services.judges import columns

    ds = labelled_dataset(engine, 4)
    rows = "".join(f'{{"id": "x{i}", "p": 0.5}}\n' for i in range(4)).encode()
    name = "n" * columns.MAX_NAME
    got = judges.import_column(engine, ds, name=name, data=rows, filename="s.jsonl", score_column="p")
    assert got.n_matched == 4
    with pytest.raises(InputError):
        judges.import_column(engine, ds, name=name + "n", data=rows, filename="s.jsonl", score_column="p")


def test_a_conseval_study_that_has_not_finished_links_nothing(monkeypatch):
    from services import conseval

    row = {"model": "judge-model", "kind": "SC", "value": 0.8, "n": 30, "method": "base"}
    study = SimpleNamespace(id=4, status="running", results={"rows": [row]}, config={"models": []})
    monkeypatch.setattr(conseval, "list_studies", lambda engine: [study])
    assert links._conseval(None, "judge-model") == []


def test_label_next_strata_are_indexed_by_item_id(engine):
    from services.judges import systems
    from tests.support.systems import systems_dataset

    ds, _ = systems_dataset(engine, {"old": 0.5, "new": 0.9}, n_refs=10, n_labelled=4)
    frame = systems.item_systems(engine, ds)
    got = systems.strata(engine, ds)
    assert got.to_dict() == dict(zip(frame["item_id"], frame["system"], strict=True))


# -- the thresholds and limits met exactly ----------------------------------------------------------------------
def test_a_score_column_of_exactly_one_half_says_consistent(engine):
    """A column's verdict is "consistent" at 0.5 or more (docs/judges.md): 0.5 itself is consistent."""
    from services import judges

    ds = labelled_dataset(engine, 4)
    rows = "".join(f'{{"id": "x{i}", "p": {p}}}\n' for i, p in enumerate([0.5, 0.4999, 0.5001, 0.0]))
    col = judges.import_column(engine, ds, name="half", data=rows.encode(), filename="s.jsonl", score_column="p")
    frame = judges.column_frame(engine, ds, col.name)
    assert frame["verdict"].tolist() == [1.0, 0.0, 1.0, 0.0]


def test_a_human_score_of_exactly_one_half_is_of_the_consistent_class_on_the_card():
    """Without labels the card reads a human score of 0.5 or more as consistent: five scores of exactly 0.5 and
    five of 0.2 are five of each class, enough for balanced accuracy (a judge that agrees: 1.0)."""
    import pandas as pd

    from services.judges.card import JudgeInfo, card_from_frames

    ids = np.arange(10)
    hs = np.r_[np.full(5, 0.5), np.full(5, 0.2)]
    human = pd.DataFrame({"item_id": ids, "idx": ids, "external_id": ids.astype(str), "label": np.nan, "hscore": hs})
    judge = pd.DataFrame(
        {"item_id": ids, "status": "done", "score": hs, "n_sentences": 1, "n_unknown": 0, "calls": 1}
        | {"cache_hits": 0, "prompt_tokens": 1, "completion_tokens": 1, "latency_ms": 1.0}
    )
    judge["prediction"], judge["verdict"] = hs, (ids < 5).astype(float)
    ba = card_from_frames(JudgeInfo("x", "x", "column", ""), judge, human).agreement.balanced_accuracy
    assert ba.value == 1.0 and ba.n == 10


def test_a_systems_raw_rate_counts_a_score_of_exactly_one_half_as_consistent():
    import pandas as pd

    from services.judges import compare as cmp

    frame = pd.DataFrame(
        {
            "system": ["a"] * 4 + ["b"] * 4,
            "prediction": [0.5, 0.5, 0.5, 0.4, 0.5, 0.3, 0.2, 0.1],
            "label": [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0],
        }
    )
    got = {s.system: s.judge_rate for s in cmp.compare(frame).systems}
    assert got == {"a": 0.75, "b": 0.25}


def test_a_difference_whose_interval_ends_at_exactly_0_is_not_a_difference_shown():
    """Significant means the interval excludes 0: a limit of exactly 0 does not."""
    from services.judges import compare as cmp

    for lo, hi in ((-0.1, 0.0), (0.0, 0.1)):
        assert cmp.sentence("A", "B", (lo + hi) / 2, lo, hi).startswith("No difference shown between A and B")
    assert cmp.sentence("A", "B", -0.05, -0.1, -1e-9).startswith("B is more consistent than A")
    assert cmp.sentence("A", "B", 0.05, 1e-9, 0.1).startswith("A is more consistent than B")


@pytest.mark.parametrize(("limits", "significant"), [((-0.1, 0.0), False), ((0.0, 0.1), False), ((0.01, 0.1), True)])
def test_the_comparisons_significant_flag_excludes_a_limit_of_exactly_0(monkeypatch, limits, significant):
    import pandas as pd

    from services.judges import compare as cmp

    lo, hi = limits
    monkeypatch.setattr(cmp, "mover", lambda a, b, r: ((lo + hi) / 2, lo, hi))
    rng = np.random.default_rng(0)
    y = (rng.random(60) < 0.5).astype(float)
    frame = pd.DataFrame({"system": ["a"] * 30 + ["b"] * 30, "prediction": y * 0.6 + 0.2, "label": y})
    (d,) = cmp.compare(frame).differences
    assert d.significant is significant and d.sentence.startswith("No difference shown") is not significant


# -- agreement, every mutant run ---------------------------------------------------------------------------------
def test_an_agreement_number_without_a_note_has_no_note_in_its_json():
    assert agreement.Metric(0.8, 20, 0.6, 0.9).as_dict() == {"value": 0.8, "ci": [0.6, 0.9], "n": 20}


def test_auroc_says_what_it_needs_and_over_how_many_items():
    labels = np.r_[np.ones(4), np.zeros(6)]
    m = agreement.agreement(labels * 0.8 + 0.1, labels, labels).auroc
    assert (m.value, m.n) == (None, 10)
    assert m.note == (
        "AUROC needs at least 5 labelled items of each class; there are 4 consistent and 6 inconsistent. "
        "Label more items to see it."
    )


def test_pearson_is_with_the_human_scores_when_there_are_some():
    """Pearson's r is with the human score when there is one, else with the label (docs/judges.md)."""
    labels = np.r_[np.ones(6), np.zeros(6)]
    hs = np.array([0.9, 0.6, 0.8, 1.0, 0.7, 0.55, 0.1, 0.4, 0.0, 0.3, 0.2, 0.45])
    scores = np.array([0.7, 0.9, 0.6, 0.8, 0.5, 0.65, 0.2, 0.1, 0.3, 0.35, 0.0, 0.4])
    with_scores = agreement.agreement(scores, labels, labels, hs).pearson
    with_labels = agreement.agreement(scores, labels, labels).pearson
    assert with_scores.value == pytest.approx(sps.pearsonr(scores, hs).statistic)
    assert with_labels.value == pytest.approx(sps.pearsonr(scores, labels).statistic)
    assert with_scores.value != pytest.approx(with_labels.value)


def test_agreement_reads_none_in_python_lists_as_missing():
    """Items without a score, verdict, label or human score are left out of each number: None in a list too."""
    labels = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, None]
    scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.95, 0.1, 0.2, 0.3, 0.35, 0.6, 0.05, 0.5]
    verdicts = [1, 1, 1, 1, 0, None, 0, 0, 0, 0, 1, 0, 1]
    hs = [0.9, 0.8, 0.7, 0.9, 0.6, 1.0, 0.1, 0.0, 0.2, 0.3, 0.4, 0.1, None]
    a = agreement.agreement(scores, verdicts, labels, hs)
    want = agreement.agreement(
        *(np.array([np.nan if x is None else x for x in v], float) for v in (scores, verdicts, labels, hs))
    )
    assert a == want and a.balanced_accuracy.n == 11 and a.auroc.n == 12 and a.pearson.n == 12


def test_each_measure_below_the_minimum_says_what_it_needs_over_its_items():
    """Balanced accuracy and kappa count the items the judge decided ("decided labelled items"), AUROC and
    Pearson's r every labelled item with a score; each keeps its n."""
    labels = np.r_[np.ones(4), np.zeros(6)]
    a = agreement.agreement(labels * 0.8 + 0.1, labels, labels)
    tail = "labelled items of each class; there are 4 consistent and 6 inconsistent. Label more items to see it."
    assert a.balanced_accuracy.note == f"Balanced accuracy needs at least 5 decided {tail}"
    assert a.kappa.note == f"Kappa needs at least 5 decided {tail}"
    assert a.pearson.note == f"Pearson's r needs at least 5 {tail}"
    assert [m.n for m in (a.balanced_accuracy, a.auroc, a.kappa, a.pearson)] == [10] * 4
    assert all(m.value is None for m in (a.balanced_accuracy, a.auroc, a.kappa, a.pearson))


def test_pearson_without_an_interval_keeps_its_n():
    labels = np.r_[np.ones(5), np.zeros(6)]
    assert agreement.agreement(labels, labels, labels).pearson.n == 11
    assert agreement.agreement(np.full(11, 0.3), labels, labels).pearson.n == 11


def test_kappas_interval_is_cut_to_minus_1_and_1():
    """kappa lies in [-1, 1]: 5 + 5 items with one verdict wrong give kappa 0.8 whose kappa + z * ASE is above 1
    (cut to 1); one verdict right of ten, -0.8 and a lower end cut to -1."""
    from statsmodels.stats.inter_rater import cohens_kappa, to_table

    labels = np.r_[np.ones(5), np.zeros(5)]
    for verdicts, cut in ((np.r_[0, np.ones(4), np.zeros(5)], "high"), (np.r_[1, np.zeros(4), np.ones(5)], "low")):
        k = agreement.agreement(verdicts, verdicts, labels).kappa
        res = cohens_kappa(to_table(np.c_[labels, verdicts], bins=[0, 1, 2])[0])
        z = sps.norm.ppf(0.975)
        assert k.value == pytest.approx(0.8 if cut == "high" else -0.8) and k.n == 10
        if cut == "high":
            assert res.kappa + z * res.std_kappa > 1 and k.ci_high == 1.0
            assert k.ci_low == pytest.approx(res.kappa - z * res.std_kappa)
        else:
            assert res.kappa - z * res.std_kappa < -1 and k.ci_low == -1.0
            assert k.ci_high == pytest.approx(res.kappa + z * res.std_kappa)


def test_kappa_without_an_interval_keeps_its_n():
    labels = np.r_[np.ones(6), np.zeros(5)]
    k = agreement.agreement(labels, labels, labels).kappa
    assert (k.value, k.n, k.ci_low) == (1.0, 11, None)


# -- columns, every mutant run -----------------------------------------------------------------------------------
def _import(engine, ds, rows: str, **kw):
    from services import judges

    args = {"name": "t", "data": rows.encode(), "filename": "s.jsonl", "score_column": "p"} | kw
    return judges.import_column(engine, ds, **args)


def test_a_score_column_has_the_shape_of_a_judges_frame(engine):
    """column_frame is data.judge_frame's shape: float predictions and verdicts (NaN where there is no value),
    integer counts of 0 (it costs nothing)."""
    from services import judges

    ds = labelled_dataset(engine, 3)
    col = _import(engine, ds, '{"id": "x0", "p": 0.7}\n{"id": "x2", "p": 0.2}\n')
    frame = judges.column_frame(engine, ds, col.name)
    for name in ("prediction", "verdict", "score"):
        assert frame[name].dtype == np.float64, name
    assert np.isnan(frame["prediction"].iloc[1]) and np.isnan(frame["verdict"].iloc[1])
    for name in ("n_sentences", "n_unknown", "calls", "cache_hits", "prompt_tokens", "completion_tokens"):
        assert frame[name].dtype.kind == "i" and frame[name].tolist() == [0, 0, 0], name
    assert frame["status"].tolist() == ["done", "failed", "done"]


def test_a_stored_metric_outside_0_and_1_is_clipped_into_a_prediction(engine):
    """A local metric stored for the dataset may lie outside [0, 1]; its prediction is clipped there."""
    from db import judges as db
    from db.engine import get_session
    from services import judges

    ds = labelled_dataset(engine, 3)
    with get_session(engine) as session:
        ids = list(db.external_ids(session=session, dataset_id=ds).values())
        rows = [{"item_id": i, "metric": "rouge", "value": v} for i, v in zip(ids, (1.7, -0.4, 0.6), strict=True)]
        db.replace_column(session=session, item_ids=ids, metric="rouge", rows=rows)
    frame = judges.column_frame(engine, ds, "rouge")
    assert frame["prediction"].tolist() == pytest.approx([1.0, 0.0, 0.6])


def test_an_oversized_score_file_is_refused_with_its_name_and_what_to_do(engine, monkeypatch):
    from services import tables
    from services.errors import InputError

    ds = labelled_dataset(engine, 3)
    monkeypatch.setattr(tables, "upload_limit_mb", lambda: 0)
    with pytest.raises(InputError, match=r"^s\.jsonl is 0\.0 MB; .*Split it into smaller files and import each\.$"):
        _import(engine, ds, '{"id": "x0", "p": 0.7}\n')


def test_a_score_columns_refusals_say_why(engine):
    from services.errors import InputError
    from services.judges.columns import MAX_NAME

    ds = labelled_dataset(engine, 3)
    with pytest.raises(InputError, match=rf"^Give the column a name of 1 to {MAX_NAME} characters\.$"):
        _import(engine, ds, '{"id": "x0", "p": 0.7}\n', name="  ")
    with pytest.raises(InputError, match=r"^s\.csv has no rows of named fields\.$"):
        _import(engine, ds, "", filename="s.csv")
    cols = ",".join(f"c{i}" for i in range(8))
    with pytest.raises(InputError, match=r"it has 'c0', 'c1', 'c2', 'c3', 'c4' and 3 more\.$"):
        _import(engine, ds, cols + "\n" + ",".join("1" * 8) + "\n", filename="s.csv")


def test_a_dataset_without_items_takes_no_column(engine):
    from sqlmodel import Session

    from db.models import Dataset
    from services.errors import InputError

    with Session(engine) as session:
        empty = Dataset(name="empty", format="jsonl", sha256="empty", n_items=0)
        session.add(empty)
        session.commit()
        ds = empty.id
    with pytest.raises(InputError, match=rf"^Dataset {ds} has no items\.$"):
        _import(engine, ds, '{"id": "x0", "p": 0.7}\n')


def test_repeated_ids_name_each_with_its_first_ten_rows_and_more_only_past_three(engine):
    from services.errors import InputError

    ds = labelled_dataset(engine, 12)
    rows = "".join(f'{{"id": "x{i}", "p": 0.5}}\n' for i in (0, 1, 2, 0, 1, 2))
    with pytest.raises(InputError, match=r"'x0' on rows 1, 4; 'x1' on rows 2, 5; 'x2' on rows 3, 6\. Give each"):
        _import(engine, ds, rows)
    rows = "".join('{"id": "x0", "p": 0.5}\n' for _ in range(12))
    with pytest.raises(InputError, match=r"'x0' on rows 1, 2, 3, 4, 5, 6, 7, 8, 9, 10\. Give each item one row\.$"):
        _import(engine, ds, rows)


def test_an_imported_column_counts_its_rows_without_a_number(engine):
    ds = labelled_dataset(engine, 4)
    got = _import(engine, ds, '{"id": "x0", "p": 0.7}\n{"id": "x1", "p": null}\n{"id": "zz", "p": 0.1}\n')
    assert (got.n_matched, got.n_unmatched, got.n_missing) == (1, 1, 1)
    got = _import(engine, ds, '{"id": "x0", "p": 0.7}\n')
    assert (got.n_matched, got.n_unmatched, got.n_missing) == (1, 0, 0)


def test_a_csv_column_counts_every_unmatched_row_and_empty_cells_as_missing(engine):
    ds = labelled_dataset(engine, 4)
    got = _import(engine, ds, "id,p\nzz,0.1\nyy,0.2\nx0,\nx1,0.4\n", filename="s.csv")
    assert (got.n_matched, got.n_unmatched, got.n_missing) == (1, 2, 1)


def test_a_value_that_is_not_a_number_is_named_with_its_row(engine):
    from services.errors import InputError

    ds = labelled_dataset(engine, 4)
    with pytest.raises(InputError, match=r"^Row 3: p = 'high' is not a number\.$"):
        _import(engine, ds, "id,p\nx0,0.1\nx1,0.2\nx2,high\n", filename="s.csv")


def test_an_empty_string_or_null_is_a_missing_value_and_each_counts(engine):
    ds = labelled_dataset(engine, 4)
    got = _import(engine, ds, '{"id": "x0", "p": ""}\n{"id": "x1", "p": null}\n{"id": "x2", "p": 0.3}\n')
    assert (got.n_matched, got.n_unmatched, got.n_missing) == (1, 0, 2)


def test_a_file_of_five_columns_names_them_all_and_no_more(engine):
    from services.errors import InputError

    ds = labelled_dataset(engine, 3)
    with pytest.raises(InputError, match=r"; it has 'c0', 'c1', 'c2', 'c3', 'c4'\.$"):
        _import(engine, ds, "c0,c1,c2,c3,c4\n1,1,1,1,1\n", filename="s.csv")


# -- Label next's refusals ---------------------------------------------------------------------------------------
def test_label_next_refuses_with_a_message_that_says_what_to_do(engine):
    from services import judges
    from services.errors import InputError
    from services.judges.label_next import STRATEGIES

    ds = labelled_dataset(engine, 3, n_labelled=1)
    human = judges.human_frame(engine, ds)
    with pytest.raises(InputError, match=r"^Propose at least one item\.$"):
        judges.propose(human, [], k=0)
    judges.propose(human, [], k=1)  # one item is enough to ask for
    with pytest.raises(InputError, match=rf"^Unknown strategy 'best'; one of {', '.join(STRATEGIES)}\.$"):
        judges.propose(human, [], k=1, strategy="best")
    with pytest.raises(InputError, match=r"^Choose at least one annotator\.$"):
        judges.send(engine, ds, [1], [])
    with pytest.raises(InputError, match=r"^There is no item to send\.$"):
        judges.send(engine, ds, [], [1])
    with pytest.raises(InputError, match=r"^Annotator\(s\) \[424242\] do not exist\.$"):
        judges.send(engine, ds, [1], [424242])
