"""Paper 000 (DCR: Divide-Conquer-Reasoning) held to its text: Eq. 1-4, Appendix E.4, C.1, Tables 1-4, Figs. 3-4.

Each test names the section it checks. Numbers come from the paper; the code under test computes them.
"""

from __future__ import annotations

import json
import re
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from services import dcr, metaeval, stats
from services.dcr import DCRConfig
from services.dcr.results import eq3
from services.prompts import dcr as P
from tests.conformance.paper import flat, paper
from tests.fakes import dce, last_user, toy_judge

REF = (
    "The Eiffel Tower stands in Paris. It was completed in 1889 for the World's Fair. "
    "The tower is made of wrought iron and is 330 metres tall."
)
S = ["The Eiffel Tower is in Paris.", "It was completed in 1999.", "It is made of wrought iron."]


# -- Eq. 1: DCE --------------------------------------------------------------------------------------
def test_eq1_dce_gives_one_reason_per_candidate_sentence_against_the_whole_reference(fake, client):
    """Eq. 1: {gamma_1..gamma_k} = L_DCE(<s_1..s_k>, R | M, P_DCE) with Table 8 as P_DCE."""
    fake.responder = toy_judge(bad="1999", fix="1889")
    ev = dcr.evaluate(client, REF, S, DCRConfig())
    prompt = last_user(fake.requests[0])
    assert prompt.startswith(P.SUMMARIZATION_DCE.template.split("{reference}")[0])  # Table 8, verbatim
    assert REF in prompt and " ".join(S) in prompt  # the entire reference, the candidate divided into sentences
    schema = fake.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["reason"]["minItems"] == schema["properties"]["reason"]["maxItems"] == len(S)
    assert [v.reason is not None for v in ev.sentences] == [True] * len(S)


# -- Eq. 2: AMC --------------------------------------------------------------------------------------
def test_eq2_amc_marks_each_reason_plus_or_minus_one():
    """Eq. 2: z_i in {-1, +1}; anything else is not a mark."""
    assert dcr.AMCOutput.model_validate({"reason": [], "answer": [1, -1, "+1"]}).answer == [1, -1, 1]
    for bad in ([0], [2], ["yes"]):
        with pytest.raises(ValueError):
            dcr.AMCOutput.model_validate({"reason": [], "answer": bad})


def test_table9_worked_example_marks_are_read_the_same_way():
    """Table 9's example: two negative paragraphs (-1) and a positive one (+1)."""
    paragraphs = [
        "The attempt answer is incorrect as it states that employees in the US are not eligible to participate in "
        "the ESPP, which contradicts the true answer. So it is incorrect",
        "The attempt answer adds a new aspect that is not in the true answer.",
        "Yet it does list the correct article.And that is helpful.",
    ]
    assert [dcr.rule_mark(p) for p in paragraphs] == [-1, -1, 1]


def test_eq2_llm_converter_sends_table9_with_every_reason(fake, client):
    reasons = ["This sentence is consistent with the article.", "The article says otherwise about the year."]
    fake.enqueue_json(dce(*zip(S[:2], reasons, strict=True)))
    fake.enqueue_json({"reason": ["positive", "negative"], "answer": [1, -1]})
    ev = dcr.evaluate(client, REF, S[:2], DCRConfig(amc="llm"))
    amc = last_user(fake.requests[1])
    assert amc.startswith(P.AMC.template.split("{paragraphs}")[0])
    assert all("*" + json.dumps(r) in amc for r in reasons)
    assert [v.mark for v in ev.sentences] == [1, -1]


# -- Eq. 3 ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("marks", "alpha", "beta", "z"),
    [([1, 1, 1], 0, 0, 1.0), ([-1, -1], 0, 0, -1.0), ([1, -1, -1], 0, 0, -1 / 3), ([1, -1, -1], 1, -1, 0.0)],
)
def test_eq3_score_and_its_rescaling(marks, alpha, beta, z):
    """Eq. 3: Z = (sum z_i + alpha) / (k + beta), Z^ = (Z + 1) / 2 in [0, 1]; k is the score array's length."""
    s = eq3(marks, alpha=alpha, beta=beta)
    assert s.k == len(marks)
    assert s.z == pytest.approx(z) and s.z_hat == pytest.approx((z + 1) / 2)
    assert 0.0 <= s.z_hat <= 1.0


def test_c1_alpha_and_beta_default_to_zero():
    """Appendix C.1: "we set both alpha and beta in Eq. 3 to 0"."""
    cfg = DCRConfig()
    assert (cfg.alpha, cfg.beta) == (0.0, 0.0) == (dcr.DEFAULT_ALPHA, dcr.DEFAULT_BETA)
    s = dcr.score_evaluation([1, -1], [])
    assert (s.alpha, s.beta) == (0.0, 0.0)


def test_e2_figure2_worked_example_scores_two_thirds(fake, client):
    """Appendix E (Figure 2's example): reasons consistent, not consistent, consistent; Is_Consistent False."""
    reasons = [
        "This sentence is consistent with the article. The article states that Charles Manuel, a chiropractor in "
        "Iowa, surrendered his license and admitted to accepting sex as payment for his services and performing "
        "exorcisms on patients.",
        "This sentence is not consistent with the article. The article does mention that Manuel recommended patients "
        "stop taking medication he prescribed to them, but it does not state that this condition must be met before "
        "he can resume practicing.",
        "This sentence is consistent with the article. The article mentions that despite his misdeeds, Manuel "
        "received outstanding evaluations for patient satisfaction on healthgrades.com, including a perfect five out "
        "of five stars.",
    ]
    fake.enqueue_json(
        {"reason": [{"sentence": s, "reason": r} for s, r in zip(S, reasons, strict=True)], "is_consistent": False}
    )
    ev = dcr.evaluate(client, REF, S, DCRConfig())
    assert [v.mark for v in ev.sentences] == [1, -1, 1]
    assert ev.score.z == pytest.approx(1 / 3) and ev.score.z_hat == pytest.approx(2 / 3)
    assert ev.model_is_consistent is False


def test_e4_example_alpha_one_beta_minus_one(fake, client):
    """Appendix E.4: reasons ["The two paragraphs are not consistent.", "This sentence is consistent.",
    "This sentence is not consistent."] -> the paragraph-level -1 is removed by alpha = 1, beta = -1 (Eq. 5)."""
    fake.enqueue_json(
        {
            "is_consistent": False,
            "reasons": [
                "The two paragraphs are not consistent.",
                "This sentence is consistent.",
                "This sentence is not consistent.",
            ],
        }
    )
    ev = dcr.evaluate(client, REF, S[:2], DCRConfig())
    assert [v.mark for v in ev.sentences] == [1, -1] and [x.mark for x in ev.extras] == [-1]
    s = ev.score
    assert (s.k, s.alpha, s.beta) == (3, 1.0, -1.0)
    # Eq. 5: Z = (sum z_i + 1) / (k - 1) over the array [-1, +1, -1]
    assert s.z == pytest.approx((-1 + 1 - 1 + 1) / (3 - 1)) and s.z_hat == pytest.approx(0.5)


def test_eq3_is_computed_from_sentence_level_reasons_only():
    """Section 3 / E.4: "to ensure that the score calculated is solely generated by sentence-level reasons"."""
    base = dcr.score_evaluation([1, 1, -1], [])
    for extras in ([1], [-1], [1, -1, -1]):
        assert dcr.score_evaluation([1, 1, -1], extras).z == pytest.approx(base.z)


# -- Eq. 4 and Algorithm 1 -----------------------------------------------------------------------------
def test_eq4_rai_rewrites_inconsistent_sentences_and_retains_the_rest(fake, client):
    """Eq. 4: s^_i != s_i only where s_i is inconsistent; otherwise s_i is retained."""
    fake.responder = toy_judge(bad="1999", fix="1889")
    first = dcr.first_round(client, REF, S, DCRConfig())
    rewrites, error = dcr.improve(client, REF, first, DCRConfig())
    assert error is None and [rw.index for rw in rewrites] == [1]
    assert dcr.apply_rewrites(S, rewrites) == [S[0], "It was completed in 1889.", S[2]]


def test_algorithm1_iterates_until_consistent_or_m_rounds(fake, client):
    """Algorithm 1: DCE -> AMC -> RAI, re-evaluated, for rounds r = 1..m; stops once every sentence is consistent."""
    fake.responder = toy_judge(bad="1999", fix="1889")
    cfg = DCRConfig(max_rounds=3)
    rounds = dcr.continue_rounds(client, REF, [dcr.first_round(client, REF, S, cfg)], cfg)
    assert [r.index for r in rounds] == [0, 1]
    assert rounds[-1].evaluation.all_consistent and rounds[-1].evaluation.score.z_hat == 1.0
    fake.responder = toy_judge(bad="1999", fix="1999")  # an improver that never fixes it: stops after no change
    stuck = dcr.continue_rounds(client, REF, [dcr.first_round(client, REF, S, cfg)], cfg)
    assert len(stuck) == 1 and stuck[0].evaluation.score.z_hat < 1


# -- Table 1: AUROC --------------------------------------------------------------------------------------
def test_table1_auroc_is_the_probability_a_consistent_pair_outscores_an_inconsistent_one():
    """Table 1 (after BERTScore): AUROC of the score against the binary paraphrase label; ties count one half."""
    scores = np.array([0.9, 0.8, 0.8, 0.4, 0.3, 0.8, 0.1])
    labels = np.array([1, 1, 0, 1, 0, 1, 0])
    pos, neg = scores[labels == 1], scores[labels == 0]
    expected = np.mean([1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg])
    assert stats.auroc(scores, labels, n_boot=0).auc == pytest.approx(expected)


# -- Tables 2 and 3: correlations ------------------------------------------------------------------------
X = np.array([0.2, 0.5, 0.5, 0.9, 1.0, 0.1, 0.7])
Y = np.array([1.0, 2.0, 3.0, 3.0, 5.0, 1.0, 4.0])


def _ranks(v: np.ndarray) -> np.ndarray:
    order = {x: np.mean([i + 1 for i, y in enumerate(sorted(v)) if y == x]) for x in v}
    return np.array([order[x] for x in v])


def test_table3_pearson_spearman_kendall_tau_b_definitions():
    """Table 3: Pearson r, Spearman rho (Pearson of ranks) and Kendall tau (tau-b, correcting for ties)."""
    pearson = np.sum((X - X.mean()) * (Y - Y.mean())) / np.sqrt(
        np.sum((X - X.mean()) ** 2) * np.sum((Y - Y.mean()) ** 2)
    )
    rx, ry = _ranks(X), _ranks(Y)
    spearman = np.corrcoef(rx, ry)[0, 1]
    conc = disc = tx = ty = 0
    for i, j in combinations(range(len(X)), 2):
        dx, dy = np.sign(X[i] - X[j]), np.sign(Y[i] - Y[j])
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            tx += 1
        elif dy == 0:
            ty += 1
        elif dx == dy:
            conc += 1
        else:
            disc += 1
    tau_b = (conc - disc) / np.sqrt((conc + disc + tx) * (conc + disc + ty))
    for method, want in (("pearson", pearson), ("spearman", spearman), ("kendall", tau_b)):
        assert stats.correlation(X, Y, method, n_boot=0).r == pytest.approx(want)


def test_table2_summary_level_correlation_averages_per_document():
    """Table 2 (after Zhong et al., 2022, as G-Eval computes it): a correlation per document over its summaries,
    then the mean; documents where either side is constant are skipped. Three documents count, and their
    correlations' median differs from their mean, so a median in place of the mean fails."""
    docs = np.array([1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4])
    x = np.array([0.1, 0.4, 0.2, 0.9, 0.3, 0.3, 0.8, 0.1, 0.1, 0.2, 0.3, 0.4, 0.5, 0.5])
    y = np.array([1, 2, 3, 4, 2, 1, 4, 3, 1, 2, 3, 4, 1, 5])
    per = [stats.correlation(x[docs == d], y[docs == d], "kendall", n_boot=0).r for d in (1, 2, 3)]
    assert abs(np.median(per) - np.mean(per)) > 0.05
    got = stats.per_group_correlation(x, y, docs, "kendall")
    assert got.r == pytest.approx(np.mean(per)) and (got.n_groups, got.n_skipped) == (3, 1)


# -- Figure 3 ---------------------------------------------------------------------------------------------
def test_figure3_consistent_is_the_positive_class():
    """C.3: "higher recall and lower precision implies that more candidates are incorrectly marked as consistent":
    precision and recall are about the consistent class."""
    labels = np.array([1, 1, 1, 0, 0, 0])
    sentence_level = np.array([1.0, 1.0, 0.5, 0.5, 0.5, 0.5])  # strict: misses a consistent one
    paragraph_level = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 0.5])  # lenient: passes two inconsistent ones
    s = stats.classification(sentence_level, labels, metaeval.DEFAULT_THRESHOLD, positive=metaeval.POSITIVE)
    p = stats.classification(paragraph_level, labels, metaeval.DEFAULT_THRESHOLD, positive=metaeval.POSITIVE)
    assert p.recall > s.recall and p.precision < s.precision
    assert p.fp == 2  # the inconsistent candidates incorrectly marked as consistent
    assert metaeval.POSITIVE == 1


# -- Table 4 and Figure 4 -----------------------------------------------------------------------------------
def _rai_frame(n_inconsistent: int, corrected_round1: int, corrected_later: int = 0, n_consistent: int = 5):
    rows = [{"score": 1.0, "score_r1": np.nan, "final_score": 1.0, "n_rounds": 1}] * n_consistent
    rows += [{"score": 0.5, "score_r1": 1.0, "final_score": 1.0, "n_rounds": 2}] * corrected_round1
    rows += [{"score": 0.5, "score_r1": 0.5, "final_score": 1.0, "n_rounds": 3}] * corrected_later
    rest = n_inconsistent - corrected_round1 - corrected_later
    rows += [{"score": 0.5, "score_r1": 0.5, "final_score": 0.5, "n_rounds": 2}] * rest
    df = pd.DataFrame(rows)
    df["status"], df["item_id"], df["score_r0"] = "done", range(len(df)), df["score"]
    df["score_r2"] = df["final_score"]
    return df


@pytest.mark.parametrize(
    ("column", "inconsistent", "corrected", "rate"),
    [
        ("SummEval sentence", 286, 248, 0.8671),
        ("SummEval paragraph", 209, 198, 0.9474),  # printed 94.73% (truncated)
        ("QAGS-CNN sentence", 111, 89, 0.8018),  # printed 88.29%: 89 / 111 is 80.18%
        ("QAGS-CNN paragraph", 68, 64, 0.9412),  # printed 94.11% (truncated)
        ("QAGS-XSUM sentence", 86, 84, 0.9767),
        ("QAGS-XSUM paragraph", 90, 82, 0.9111),
    ],
)
def test_table4_improvement_rate_is_corrected_over_inconsistent(column, inconsistent, corrected, rate):
    """Table 4: consistency improvement rate = corrected data with RAI / inconsistent data, after one RAI round."""
    t = metaeval.rai_table(
        _rai_frame(inconsistent, corrected, corrected_later=3 if inconsistent - corrected >= 3 else 0)
    )
    row = t.iloc[0]
    assert (row["inconsistent"], row["corrected"]) == (inconsistent, corrected)
    assert row["improvement_rate"] == pytest.approx(rate, abs=5e-5)


def test_c3_sentence_level_corrects_more_than_paragraph_level():
    """C.3 prints "25.25% and 39.05% more corrections": (248 - 198) / 198 = 25.2525...% (printed truncated) and
    (89 - 64) / 64 = 39.0625%, which the paper prints as 39.05% (neither rounding nor truncation gives that)."""
    assert (248 - 198) / 198 == pytest.approx(0.252525, abs=1e-6)
    assert (89 - 64) / 64 == 0.390625
    assert "25.25% and 39.05% more corrections" in paper("000")


def test_figure4_rate_per_round_is_over_the_items_inconsistent_at_round_0():
    """Fig. 4: the consistency improvement rate after r rounds of RAI, among the items inconsistent before any."""
    df = _rai_frame(10, 6, corrected_later=3, n_consistent=20)
    share = metaeval.rounds_of(df).share
    assert share["n"].tolist() == [10, 10, 10]
    assert share["share"].tolist() == pytest.approx([0.0, 0.6, 0.9])


# -- Appendix E.2: the prompts (Tables 7-12), against the paper's own text --------------------------------
TABLES = [
    ("Table 7: Semantic Consistency Divide-Conquer Evaluator Prompt", P.SEMANTIC_DCE),
    ("Table 8: Summarization Consistency Divide-Conquer Evaluator Prompt", P.SUMMARIZATION_DCE),
    ("Table 9: Auto-Metric Converter Prompt", P.AMC),
    ("Table 10: Reason-Assisted Improver Prompt", P.RAI),
    ("Table 11: Paragraph Level Evaluator Prompt", P.PARAGRAPH_DCE),
    ("Table 12: Paragraph Level Reason Assisted Improver Prompt", P.PARAGRAPH_RAI),
]
# The paper's slots, in the project's names (the text around them is compared word for word).
SLOTS = {
    "{*true answer*}": "{reference}",
    "{*answer to evaluate*}": "{candidate}",
    "{*article*}": "{reference}",
    "{*summary*}": "{candidate}",
    "{*attempt answer*}": "{paragraphs}",
    "{*sentences*}": "{sentences}",
    "{*reason*}": "{reason}",
}


def _table(caption: str, end: str) -> str:
    """A prompt as the appendix prints it, with the extraction's list dashes and code fences undone."""
    text = paper("000")
    i = text.rindex(caption) + len(caption)
    body = text[i : text.index(end, i)]
    for slot, name in SLOTS.items():
        body = body.replace(slot, name)
    body = re.sub(r"(?m)^\s*- (\*)", r"\1", body.replace("```", "").replace("---", ""))
    return flat(body)


@pytest.mark.parametrize("n", range(len(TABLES)), ids=[t[1].name for t in TABLES])
def test_appendix_e2_tables_7_to_12_prompts_are_the_papers_word_for_word(n):
    """Tables 7-12: DCE (semantic, summarization), AMC, RAI and the paragraph-level evaluator and improver of
    Figure 3 and Table 4 are the appendix's prompts, word for word."""
    caption, prompt = TABLES[n]
    end = TABLES[n + 1][0] if n + 1 < len(TABLES) else "E.3 DIVIDE-CONQUER EVALUATOR EXAMPLES"
    assert flat(prompt.template) == _table(caption, end)


def test_tables_11_and_12_are_what_the_paragraph_level_method_sends():
    """Figure 3 and Table 4's paragraph level use Table 11 to evaluate and Table 12 to improve; the sentence level
    Table 8 and Table 10."""
    cfg = DCRConfig(method="paragraph")
    assert (cfg.dce_prompt(), cfg.improve_prompt()) == (P.PARAGRAPH_DCE, P.PARAGRAPH_RAI)
    assert (DCRConfig().dce_prompt(), DCRConfig().improve_prompt()) == (P.SUMMARIZATION_DCE, P.RAI)


def _figure3_data(scores, is_consistent, labels, method="dce-amc", batch_id=1):
    from types import SimpleNamespace

    from services.metaeval.loading import BatchData

    items = pd.DataFrame(
        {
            "item_id": range(len(scores)),
            "status": "done",
            "score": scores,
            "model_is_consistent": is_consistent,
            "human_label": labels,
        }
    )
    batch = SimpleNamespace(id=batch_id, method=method, amc="rule", dataset_id=1)
    return BatchData(batch, None, items, pd.DataFrame(), np.empty((0, 0)), 0, 0, 0)


def test_figure3_dce_with_and_without_amc_and_the_paragraph_level():
    """Figure 3: DCE-AMC (consistent when AMC's score reaches 1) beside DCE alone (the model's is_consistent) and
    the paragraph-level evaluator, each by precision, recall and F1 with "consistent" the positive class."""
    labels = [1, 1, 1, 1, 0, 0, 0, 0]
    amc_scores = [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 1.0]  # tp 3, fn 1, fp 1
    dce_alone = [True, True, False, False, True, True, False, False]  # tp 2, fn 2, fp 2
    paragraph = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0]  # tp 4, fn 0, fp 2
    fig = metaeval.figure3(
        data=_figure3_data(amc_scores, dce_alone, labels),
        other=_figure3_data(paragraph, [None] * 8, labels, method="paragraph", batch_id=2),
    ).frame.set_index("evaluator")
    with_amc = fig.loc["Sentence level (DCE) + AMC (rule)"]
    without = fig.loc["Sentence level (DCE) without AMC (model's is_consistent)"]
    para = fig.loc["Paragraph level + AMC (rule)"]
    assert (with_amc.precision, with_amc.recall, with_amc.f1) == pytest.approx((3 / 4, 3 / 4, 3 / 4))
    assert (without.precision, without.recall, without.f1) == pytest.approx((2 / 4, 2 / 4, 2 / 4))
    assert (para.precision, para.recall) == pytest.approx((4 / 6, 1.0)) and para.f1 == pytest.approx(0.8)
