"""Meta-evaluation: hand-checkable batches for every table, the QAGS human alpha, the reproducibility bundle."""

from __future__ import annotations

import hashlib
import json
import math

import krippendorff
import numpy as np
import pandas as pd
import pytest
from pydantic import SecretStr
from scipy import stats as sps

from services import baselines as bl
from services import datasets, dcr, metaeval, stats
from services.config import BackendConfig
from services.jobs import batches
from services.prompts import dcr as prompts
from services.text import InputError
from tests.fakes import FakeOpenAIServer, toy_judge
from tests.metaeval_seed import Item, add_batch, make_dataset, seed
from tests.support.metaeval import HAND, LABELLED, ROUNDS, C, X
from tests.support.qags import QAGS_FILE, qags_alpha

# HAND's scores (Eq. 3 of the verdicts; tests/support/metaeval.py works them out).
SCORES = [1.0, 0.5, 0.0, 1.0, 2 / 3, 1.0, 0.0, 0.75]


def test_batch_frame_has_one_row_per_item_with_round_scores(engine):
    _, bid = seed(engine, HAND)
    df = metaeval.batch_frame(engine, bid)
    assert len(df) == 8
    assert df["score"].tolist() == pytest.approx(SCORES)
    assert df["score_r0"].tolist() == pytest.approx(SCORES)
    assert df["human_label"].tolist() == [1, 0, 0, 0, 1, 1, 0, 0]
    assert df["model_is_consistent"].tolist() == [True, False, False, True, True, True, True, False]
    assert set(df["n_rounds"]) == {1}


@pytest.mark.parametrize("items", [HAND, "ROUNDS", "LABELLED"])
def test_sql_json_path_and_python_path_read_the_same(engine, items):
    items = {"ROUNDS": ROUNDS, "LABELLED": LABELLED}.get(items, items) if isinstance(items, str) else items
    _, bid = seed(engine, [*items, Item([[C, C]], status="failed")])
    a = metaeval.load_batch(engine, bid, sql_json=True)
    b = metaeval.load_batch(engine, bid, sql_json=False)
    pd.testing.assert_frame_equal(a.items, b.items)
    pd.testing.assert_frame_equal(a.sentences, b.sentences)
    np.testing.assert_array_equal(a.votes, b.votes)
    assert (a.n_workers, a.n_vote_items, a.n_misaligned) == (b.n_workers, b.n_vote_items, b.n_misaligned)
    assert a.notes == b.notes and any("1 item(s) failed" in n for n in a.notes)


def test_correlations_equal_scipys_and_the_interval_brackets_them(engine):
    _, bid = seed(engine, HAND)
    res = metaeval.summary_level(metaeval.batch_frame(engine, bid), threshold=1.0, seed=3, n_boot=500)
    human = [it.human_score for it in HAND]
    expected = {
        "pearson": sps.pearsonr(SCORES, human).statistic,
        "spearman": sps.spearmanr(SCORES, human).statistic,
        "kendall": sps.kendalltau(SCORES, human).statistic,
    }
    got = {c.method: c for c in res.correlations.correlations}
    for method, r in expected.items():
        assert got[method].r == pytest.approx(r, abs=1e-12)
        assert got[method].n == 8
        assert got[method].ci_low <= got[method].r <= got[method].ci_high
    # AUROC: P(score of a consistent item > score of an inconsistent one), ties 1/2.
    pos = [s for s, it in zip(SCORES, HAND, strict=True) if it.human_label == 1]
    neg = [s for s, it in zip(SCORES, HAND, strict=True) if it.human_label == 0]
    pairs = [(p > n) + 0.5 * (p == n) for p in pos for n in neg]
    assert res.correlations.auroc.auc == pytest.approx(sum(pairs) / len(pairs))
    table = res.correlations.frame()
    assert table["statistic"].tolist() == ["pearson", "spearman", "kendall", "auroc"]


def test_classification_at_threshold_one_counts_consistency_as_positive(engine):
    """DCR C.3 reads Figure 3 with "consistent" as the positive class: tp = marked consistent and consistent."""
    _, bid = seed(engine, HAND)
    c = metaeval.summary_level(metaeval.batch_frame(engine, bid), threshold=1.0, n_boot=0).classification
    assert (c.tp, c.fp, c.fn, c.tn) == (2, 1, 1, 4)
    assert c.precision == pytest.approx(2 / 3) and c.recall == pytest.approx(2 / 3) and c.f1 == pytest.approx(2 / 3)
    assert c.balanced_accuracy == pytest.approx((0.8 + 2 / 3) / 2)
    lower = metaeval.summary_level(metaeval.batch_frame(engine, bid), threshold=0.6, n_boot=0).classification
    assert (lower.tp, lower.fp, lower.fn, lower.tn) == (3, 2, 0, 3)  # 0.0, 0.5, 0.0 flagged
    assert metaeval.DEFAULT_THRESHOLD == 1.0


def test_without_human_scores_the_notes_say_so(engine):
    items = [Item([[C, X]]), Item([[C, C]]), Item([[X]])]
    _, bid = seed(engine, items)
    res = metaeval.summary_level(metaeval.batch_frame(engine, bid), n_boot=10)
    assert all(c.r is None for c in res.correlations.correlations)
    assert any("no human scores" in n for n in res.correlations.notes)
    assert any("no binary human labels" in n for n in res.correlations.notes)
    assert res.correlations.auroc.auc is None


def test_a_running_batch_covers_the_finished_items_and_says_so(engine):
    items = [*HAND[:5], Item([[C, C]], human_score=1.0, human_label=1, status="pending")]
    _, bid = seed(engine, items, status="running")
    data = metaeval.load_batch(engine, bid)
    assert len(data.done) == 5
    assert any("still running" in n and "5 of 6" in n for n in data.notes)
    assert metaeval.summary_level(data.items, n_boot=0).correlations.n_items == 5


# -- RAI --------------------------------------------------------------------------------------------


def test_table4_counts_inconsistent_and_corrected_items(engine):
    _, bid = seed(engine, ROUNDS)
    t = metaeval.rai_table(metaeval.batch_frame(engine, bid)).iloc[0]
    # DCR Table 4 is one RAI round: only the item corrected in round 1 counts; m rounds are reported apart.
    assert (t["evaluated"], t["inconsistent"], t["corrected"]) == (5, 4, 1)
    assert t["improvement_rate"] == pytest.approx(0.25)
    assert (t["corrected_after_m"], t["rate_after_m"]) == (2, pytest.approx(0.5))
    assert t["rounds_run"] == 2


def test_share_consistent_after_each_round_carries_stopped_items_forward(engine):
    _, bid = seed(engine, ROUNDS)
    r = metaeval.rounds_table(engine, bid)
    assert r.share["round"].tolist() == [0, 1, 2]
    # Figure 4's rate is over the 4 items inconsistent at round 0, not all 5
    assert r.share["n"].tolist() == [4, 4, 4]
    assert r.share["consistent"].tolist() == [0, 1, 2]
    assert r.share["share"].tolist() == pytest.approx([0.0, 0.25, 0.5])
    by_round = r.scores.groupby("round")["score"].apply(sorted).to_dict()
    assert by_round[0] == pytest.approx([0.0, 0.0, 0.5, 0.5, 1.0])
    assert by_round[2] == pytest.approx([0.0, 0.5, 1.0, 1.0, 1.0])


def test_a_batch_without_rounds_has_one_round_and_a_note(engine):
    _, bid = seed(engine, HAND)
    r = metaeval.rounds_table(engine, bid)
    assert r.share["round"].tolist() == [0] and r.notes


# -- sentence level and human agreement ---------------------------------------------------------------


def test_sentence_level_compares_verdicts_with_the_majority_and_counts_what_is_left_out(engine):
    _, bid = seed(engine, LABELLED)
    s = metaeval.sentence_level(engine, bid)
    # Majorities: [1, 0, tie], [0, 0], [1, 1, 1]. The tie and the unknown verdict are left out.
    assert (s.n_sentences, s.n_labelled, s.n_ties, s.n_unknown, s.n_compared) == (8, 8, 1, 1, 6)
    c = s.classification
    # Pairs (model, human): (C,1) (X,0) | (X,0) (C,0) | (C,1) (X,1): inconsistent is positive.
    assert (c.tp, c.fp, c.fn, c.tn) == (2, 1, 1, 2)
    assert c.precision == pytest.approx(2 / 3) and c.recall == pytest.approx(2 / 3)


def test_human_alpha_equals_krippendorff_on_the_workers_by_sentences_matrix(engine):
    ds, bid = seed(engine, LABELLED)
    workers = ["w1", "w2", "w3", "w4"]
    units = [v for it in LABELLED for v in it.sentence_labels]
    matrix = np.array([[u.get(w, np.nan) for u in units] for w in workers], dtype=float)
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    h = metaeval.human_agreement(engine, batch_id=bid, n_boot=200, seed=1)
    assert h.among_humans.alpha == pytest.approx(expected, abs=1e-12)
    assert (h.n_sentences, h.n_workers, h.n_items) == (8, 4, 3)
    assert h.among_humans.n_raters == 4 and h.among_humans.n_pairable == 8
    # The same through the project's own function on the workers matrix, interval included.
    direct = stats.krippendorff_alpha(matrix, "nominal", n_boot=200, seed=1)
    assert (h.among_humans.ci_low, h.among_humans.ci_high) == pytest.approx((direct.ci_low, direct.ci_high))
    assert metaeval.human_agreement(engine, dataset_id=ds, n_boot=0).among_humans.alpha == pytest.approx(expected)
    # Model vs human majority: 2 raters, nominal; the unknown verdict and the tie are missing values.
    model = [1, 0, 1, 0, 1, np.nan, 1, 0]
    majority = [1, 0, np.nan, 0, 0, 1, 1, 1]
    vs = krippendorff.alpha(reliability_data=np.array([model, majority]), level_of_measurement="nominal")
    assert h.model_vs_majority.alpha == pytest.approx(vs, abs=1e-12)
    assert h.model_vs_majority.n_pairable == 6


def test_without_sentence_labels_agreement_explains_itself(engine):
    _, bid = seed(engine, HAND)
    h = metaeval.human_agreement(engine, batch_id=bid)
    assert h.among_humans is None and h.model_vs_majority is None
    assert any("no per-sentence human labels" in n for n in h.notes)
    s = metaeval.sentence_level(engine, bid)
    assert s.classification is None and any("No per-sentence human labels" in n for n in s.notes)


@pytest.mark.skipif(not QAGS_FILE.is_file(), reason="../shared/data/qags_cnndm_mturk.jsonl is not present")
def test_qags_human_alpha_is_exact(engine):
    data = QAGS_FILE.read_bytes()
    saved = datasets.save_dataset(engine, name="QAGS-CNN/DM", data=data, result=datasets.read_qags(data))
    h = metaeval.human_agreement(engine, dataset_id=saved.id, n_boot=100)
    assert abs(h.among_humans.alpha - qags_alpha()) < 1e-12  # the krippendorff package on the raw file
    assert h.n_sentences == 714 and h.among_humans.n_pairable == 714 and h.n_items == 235
    assert h.n_workers == h.among_humans.n_raters > 2
    assert h.among_humans.ci_low < qags_alpha() < h.among_humans.ci_high


# -- Figure 3 -------------------------------------------------------------------------------------------
def test_figure3_compares_amc_the_models_flag_and_a_paragraph_batch(engine):
    ds, bid = seed(engine, HAND)
    # The paragraph level gives one verdict per summary: here it flags items 2, 3 and 4 only.
    para = [Item([[X if i in (1, 2, 3) else C]], flag=i not in (1, 2, 3)) for i in range(8)]
    pid = add_batch(engine, ds, para, method="paragraph")
    f = metaeval.figure3(engine, bid, pid).frame.set_index("batch", append=True)
    rows = f.reset_index(level=0, drop=True)
    amc, flag = f.iloc[0], f.iloc[1]
    assert (amc["tp"], amc["fp"], amc["fn"], amc["tn"]) == (2, 1, 1, 4)
    # Flags false on items 2, 3, 8: all truly inconsistent; 4 and 7 are wrongly marked consistent.
    assert (flag["tp"], flag["fp"], flag["fn"], flag["tn"]) == (3, 2, 0, 3)
    assert flag["precision"] == pytest.approx(0.6) and flag["recall"] == 1.0 and flag["f1"] == pytest.approx(0.75)
    p = rows.loc[pid]
    assert (p["tp"], p["fp"], p["fn"], p["tn"]) == (3, 2, 0, 3)
    assert "Paragraph level" in p["evaluator"] and "without AMC" in flag["evaluator"]


def test_figure3_has_no_row_without_amc_for_the_evidence_checker(engine):
    ds, _ = seed(engine, HAND)
    # The evidence checker records its own all-consistent verdict as the flag; it is no model's answer.
    eid = add_batch(
        engine, ds, [Item([[X if i in (1, 2) else C]], flag=i not in (1, 2)) for i in range(8)], method="evidence"
    )
    f = metaeval.figure3(engine, eid)
    assert len(f.frame) == 1
    assert not f.frame["evaluator"].str.contains("without AMC").any()
    # Its score is a probability: the row counts its own verdicts (the flags), not "score at 1".
    (row,) = f.frame.to_dict("records")
    assert "its own verdicts" in row["evaluator"] and row["n"] == 8
    assert row["tp"] + row["fp"] == 6  # the six items it called consistent


def test_figure3_refuses_a_batch_over_another_dataset(engine):
    _, bid = seed(engine, HAND)
    _, other = seed(engine, HAND, name="other")
    f = metaeval.figure3(engine, bid, other)
    assert len(f.frame) == 2 and any("another dataset" in n for n in f.notes)


# -- baselines ------------------------------------------------------------------------------------------
def test_baselines_are_computed_once_cached_and_tabled_next_to_the_model(engine, monkeypatch):
    ds, bid = seed(engine, HAND)
    df = metaeval.batch_frame(engine, bid)
    ids = df["item_id"].astype(int).tolist()
    calls = []

    def fake_embeddings(refs, cands, **kw):
        calls.append(len(refs))
        return [0.1 * (i + 1) for i in range(len(refs))]

    monkeypatch.setattr(bl, "embedding_similarity", fake_embeddings)
    monkeypatch.setattr(bl, "embeddings_available", lambda: (True, "fake"))
    assert metaeval.missing_baselines(engine, ids, with_embeddings=True) == {
        "rouge2_precision": 8,
        "rougeL_precision": 8,
        "evidence_lexical": 8,
        "embedding_minilm": 8,
    }
    added = metaeval.compute_baselines(engine, ids[:3], with_embeddings=False)
    assert added == {"rouge2_precision": 3, "rougeL_precision": 3, "evidence_lexical": 3}
    table = metaeval.baselines(engine, ds, ids, with_embeddings=True, df=df, model_label="DCE", n_boot=50)
    assert calls == [8]
    assert metaeval.missing_baselines(engine, ids, with_embeddings=True) == dict.fromkeys(metaeval.BASELINE_METRICS, 0)
    assert metaeval.compute_baselines(engine, ids, with_embeddings=True) == dict.fromkeys(metaeval.BASELINE_METRICS, 0)
    assert table["metric"].tolist() == ["DCE", *metaeval.BASELINE_METRICS.values()]
    assert (table["n"] == 8).all()
    # The cached ROUGE values are rouge-score's precision on (reference, candidate).
    values = metaeval.cached_baselines(engine, ids)
    refs = [f"Reference {i}. The council met on Tuesday." for i in range(8)]
    cands = [" ".join(f"Item {i} sentence {j}." for j in range(len(HAND[i].rounds[0]))) for i in range(8)]
    expected = [r["rouge2_precision"] for r in bl.rouge_scores(refs, cands)]
    assert values["rouge2_precision"].tolist() == pytest.approx(expected)
    dce = table.iloc[0]
    assert dce["pearson"] == pytest.approx(sps.pearsonr(SCORES, [it.human_score for it in HAND]).statistic)
    emb = table.set_index("metric").loc["MiniLM embedding similarity"]
    assert emb["spearman"] == pytest.approx(sps.spearmanr(np.arange(1, 9) * 0.1, [h.human_score for h in HAND])[0])


def test_baselines_refuse_items_of_another_dataset(engine):
    ds, bid = seed(engine, HAND)
    with pytest.raises(InputError):
        metaeval.baselines(engine, ds + 1, [1, 2], with_embeddings=False)


def test_a_baseline_not_computed_yet_is_listed_with_a_note(engine):
    _, bid = seed(engine, HAND)
    df = metaeval.batch_frame(engine, bid)
    table = metaeval.baseline_table(df, metaeval.cached_baselines(engine, df["item_id"]), n_boot=0)
    assert table["n"].tolist() == [8, 0, 0, 0, 0]
    assert (table["note"].iloc[1:] == "Not computed yet.").all()


# -- bundle and report ------------------------------------------------------------------------------------
def test_bundle_has_prompt_hashes_the_dataset_sha_and_never_the_key(engine):
    ds = make_dataset(engine, HAND)
    secret = "sk-very-secret-key-123"
    backend = BackendConfig(
        kind="openai",
        base_url="https://user:pw@api.example.com/v1?token=abc",
        model="gpt-x",
        api_key=SecretStr(secret),
        temperature=0.2,
    )
    bid = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(amc="llm", max_rounds=1))
    b = metaeval.bundle(engine, bid, seed=7)
    text = json.dumps(b)
    assert secret not in text and "pw@" not in text and "token=abc" not in text
    assert b["model"]["model"] == "gpt-x" and b["model"]["base_url"] == "https://api.example.com/v1"
    assert b["model"]["params"]["temperature"] == 0.2
    by_role = {p["role"]: p for p in b["prompts"]}
    assert by_role["evaluator"]["id"] == prompts.SUMMARIZATION_DCE.id
    assert by_role["evaluator"]["sha256"] == hashlib.sha256(prompts.SUMMARIZATION_DCE.template.encode()).hexdigest()
    assert by_role["converter"]["sha256"] == hashlib.sha256(prompts.AMC.template.encode()).hexdigest()
    assert by_role["improver"]["id"] == prompts.RAI.id
    assert b["dataset"]["sha256"] == hashlib.sha256(b"hand").hexdigest() and b["dataset"]["n_items"] == 8
    assert b["seeds"]["bootstrap_seed"] == 7
    assert b["app"]["version"] == metaeval.app_version() != "unknown"
    assert b["counts"]["items"] == 8 and b["batch"]["created_at"]


def test_bundle_drops_parameters_named_like_credentials(engine):
    _, bid = seed(engine, HAND, params={"temperature": 0, "api_key": "x", "Authorization": "y", "max_tokens": 9})
    assert metaeval.bundle(engine, bid)["model"]["params"] == {"temperature": 0, "max_tokens": 9}


def test_report_is_json_with_every_table(engine):
    _, bid = seed(engine, LABELLED + HAND)
    rep = metaeval.report(engine, bid, n_boot=50)
    text = metaeval.report_json(rep)
    back = json.loads(text)
    assert back["human_agreement"]["n_sentences"] == 8 and back["human_agreement"]["alpha"] is not None
    assert {r["statistic"] for r in back["summary_level"]["correlations"]} == {
        "pearson",
        "spearman",
        "kendall",
        "auroc",
    }
    assert back["summary_level"]["classification"]["threshold"] == 1.0
    assert back["rai"]["table4"][0]["evaluated"] == 11
    assert back["bundle"]["batch"]["id"] == bid
    assert len(back["baselines"]) == 5
    with pytest.raises(InputError):
        metaeval.report(engine, 999)


def test_a_real_batch_against_the_fake_judge_feeds_every_table(tmp_path):
    from db.engine import make_engine
    from tests.support.batches import BAD, FIX, judge_backend
    from tests.support.batches import make_dataset as make_batch_dataset

    engine = make_engine(f"sqlite:///{tmp_path}/m.db")
    with FakeOpenAIServer(responder=toy_judge(BAD, FIX)) as fake:
        ds = make_batch_dataset(engine, 6)
        bid = batches.create_batch(engine, dataset_id=ds, backend=judge_backend(fake), cfg=dcr.DCRConfig(max_rounds=2))
        batches.process_batch(engine, bid)
    rep = metaeval.report(engine, bid, n_boot=0)
    t4 = rep["rai"]["table4"][0]
    assert (t4["evaluated"], t4["inconsistent"], t4["corrected"], t4["improvement_rate"]) == (6, 3, 3, 1.0)
    assert [r["share"] for r in rep["rai"]["rounds"]] == [0.0, 1.0]
    assert rep["summary_level"]["n_items"] == 6
    assert any("no human scores" in n for n in rep["summary_level"]["notes"])
    assert not math.isnan(json.loads(metaeval.report_json(rep))["bundle"]["counts"]["calls"])
    engine.dispose()


def test_summeval_correlation_is_averaged_per_document_with_the_pooled_one_beside_it():
    """DCR Table 2 (after Zhong et al., as G-Eval computes it): correlate each document's summaries, average."""
    df = pd.DataFrame(
        {
            "status": "done",
            "score": [0.1, 0.2, 0.3, 0.9, 0.8, 0.7, 0.5, 0.5],
            "human_score": [1, 2, 3, 1, 2, 3, 1, 2],
            "human_label": np.nan,
            "document_id": [1, 1, 1, 2, 2, 2, 3, 3],
        }
    )
    c = metaeval.correlations(df, n_boot=0)
    rows = c.frame().set_index("statistic")
    # document 1: rho = 1, document 2: rho = -1, document 3: the model's scores are constant (skipped)
    assert rows.loc["spearman (per document)", "value"] == pytest.approx(0.0)
    assert "2 documents; 1 skipped" in rows.loc["spearman (per document)", "note"]
    assert rows.loc["spearman", "value"] == pytest.approx(
        stats.correlation(df["score"], df["human_score"], "spearman", n_boot=0).r
    )
    assert "Pooled" in rows.loc["spearman", "note"]


def test_baselines_progress_says_when_minilm_is_loading(engine, monkeypatch: pytest.MonkeyPatch):
    _, bid = seed(engine, HAND)
    ids = metaeval.batch_frame(engine, bid)["item_id"].astype(int).tolist()
    stages: list[str] = []
    loaded = [False]

    def fake_embeddings(refs, cands, **kw):
        loaded[0] = True  # the first chunk loads the model
        return [0.5] * len(refs)

    monkeypatch.setattr(bl, "embedding_similarity", fake_embeddings)
    monkeypatch.setattr(bl, "embeddings_available", lambda: (True, "fake"))
    monkeypatch.setattr(bl, "embedding_model_loaded", lambda: loaded[0])
    metaeval.compute_baselines(engine, ids, with_embeddings=True, on_progress=lambda d, t, s: stages.append(s))
    loading = [i for i, s in enumerate(stages) if "loading the MiniLM" in s]
    assert loading and stages[loading[0] + 1] == "embeddings", stages
    stages.clear()
    metaeval.compute_baselines(engine, ids, with_embeddings=True, on_progress=lambda d, t, s: stages.append(s))
    assert not any("loading" in s for s in stages), "loaded once: nothing left to say"
