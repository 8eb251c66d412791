"""DHP (paper 004) as the paper runs it: one test per procedure, each naming its section."""

from __future__ import annotations

import math
import random
import re

import pandas as pd
import pytest

from db.engine import get_session
from services import dhp
from services.dhp import perturb
from services.dhp import survey as sv
from services.dhp.catalogue import TASKS
from tests.conformance.paper import between, flat, paper

GOOD = [5, 5, 4, 5, 4, 5, 5, 4, 5, 5]
BAD = [2, 3, 2, 1, 3, 2, 2, 3, 1, 2]
SAME = GOOD


def _frame(spec: dict[str, tuple[str, dict[str, tuple[list[float], list[float]]]]]) -> pd.DataFrame:
    rows = [
        {"item_id": f"i{i}", "perturbation": pert, "level": level, "metric": metric, "original": o, "perturbed": p}
        for pert, (level, metrics) in spec.items()
        for metric, (orig, pz) in metrics.items()
        for i, (o, p) in enumerate(zip(orig, pz, strict=True))
    ]
    return pd.DataFrame(rows)


def _d(p: float) -> float:
    return math.log(p) / math.log(0.05)


def test_section_4_3_2_and_4_3_3_d_is_log_0_05_of_the_printed_hmp():
    """Section 4.3.2 combines the metrics' p-values as p = 1 / sum_j (1/p_j) and 4.3.3 sets D = log_0.05(p): that is
    the headline D, D_avg and D_min (and the JSON's "D"). Wilson's HMP with weights 1/M, M / sum_j (1/p_j), is a
    labelled extra, D_wilson = D - ln M / ln 20."""
    df = _frame(
        {
            "typo:minor": ("character", {"Fluency": (GOOD, BAD), "Relevance": (GOOD, SAME)}),
            "reorder:major": ("sentence", {"Fluency": (GOOD, BAD), "Relevance": (GOOD, BAD)}),
        }
    )
    res = dhp.analyse(df)
    for r in res.perturbations:
        ps = list(r.p_by_metric().values())
        assert r.p == pytest.approx(1 / sum(1 / p for p in ps))
        assert r.d == pytest.approx(_d(1 / sum(1 / p for p in ps)))
        assert r.d_wilson == pytest.approx(_d(len(ps) / sum(1 / p for p in ps)))
        assert r.d_wilson == pytest.approx(r.d - math.log(len(ps)) / math.log(20))
    by = {r.perturbation: r for r in res.perturbations}
    assert res.d_avg == pytest.approx((by["typo:minor"].d + by["reorder:major"].d) / 2)
    assert res.d_min == pytest.approx(min(r.d for r in res.perturbations))
    assert res.d_wilson_min == pytest.approx(min(r.d_wilson for r in res.perturbations))
    rec = dhp.result_record(res)
    assert (
        rec["D_avg"] == res.d_avg and rec["D_min"] == res.d_min and rec["perturbations"][0]["D"] == by["typo:minor"].d
    )
    assert {"D_wilson_avg", "D_wilson_min"} <= set(rec)
    assert "p = 1 / sum_j (1/p_j)" in rec["formula"]["D"] and "not the paper's" in rec["formula"]["D_wilson"]
    frame = dhp.summary_frame([res]).set_index("perturbation")
    assert frame.loc["D_avg", "D"] == res.d_avg and frame.loc["D_avg", "D_wilson"] == res.d_wilson_avg
    # every pair tied on both metrics: p_j = 1, so p = 1/2 and D = log_0.05(1/2) (the paper's formula as printed)
    tied = dhp.analyse(_frame({"typo:minor": ("character", {"Fluency": (GOOD, SAME), "Relevance": (GOOD, SAME)})}))
    assert tied.perturbations[0].d == pytest.approx(_d(0.5)) and tied.perturbations[0].d_wilson == 0.0


def test_section_4_3_1_the_wilcoxon_test_is_one_sided_original_greater():
    """Section 4.3.1: a one-sided test whose alternative is that the original scores are greater than the
    perturbed (scipy.stats.wilcoxon, Appendix D). Five pairs, every difference positive and distinct: the exact
    one-sided p is 1/2^5 (two-sided: 2/2^5); the other way round it is 1. Zero differences are dropped."""
    original, perturbed = [5, 5, 5, 5, 5, 3], [4, 3, 2, 1, 0, 3]
    assert dhp.wilcoxon_greater(original, perturbed).p_value == pytest.approx(1 / 32)
    assert dhp.wilcoxon_greater(perturbed, original).p_value == pytest.approx(1.0)
    t = dhp.wilcoxon_greater(original, perturbed)
    assert (t.n_pairs, t.n_ties, t.statistic) == (6, 1, 15.0)
    res = dhp.analyse(_frame({"typo:minor": ("character", {"Fluency": (original, perturbed)})}))
    assert res.perturbations[0].p_by_metric()["Fluency"] == pytest.approx(1 / 32)
    assert res.perturbations[0].d == pytest.approx(_d(1 / 32))  # one metric: p is its own p


def test_section_4_3_2_worked_example_votes_4_1_5_give_ew_0_4_0_1_0_5_and_p_ew(engine):
    """Section 4.3.2: votes 4, 1 and 5 for coherence, consistency and fluency give EW = [0.4, 0.1, 0.5], and
    p_EW = 1 / sum_j (EW_j / p_j), D_EW = log_0.05(p_EW)."""
    task = TASKS["story"]
    assert [m.name for m in task.metrics] == ["Coherence", "Consistency", "Fluency"]
    with get_session(engine) as s:
        sid = sv.create_survey(task, title="", session=s)
        for k, metric in enumerate(["Coherence"] * 4 + ["Consistency"] + ["Fluency"] * 5):
            sv.vote(sv.invite(sid, f"expert {k}", session=s).id, "typo", metric, session=s)
        ew = sv.weights(sid, session=s).weights
    assert ew["typo"] == pytest.approx({"Coherence": 0.4, "Consistency": 0.1, "Fluency": 0.5})
    df = _frame(
        {
            "typo": (
                "character",
                {
                    "Coherence": (GOOD, BAD),
                    "Consistency": (GOOD, SAME),
                    "Fluency": ([5, 4, 5, 4, 5, 4, 5, 4, 5, 4], BAD),
                },
            )
        }
    )
    r = dhp.analyse(df, weights=ew).perturbations[0]
    p = r.p_by_metric()
    want = 1 / (0.4 / p["Coherence"] + 0.1 / p["Consistency"] + 0.5 / p["Fluency"])
    assert r.p_ew == pytest.approx(want) and r.d_ew == pytest.approx(_d(want))


def test_section_4_3_3_d_avg_weighs_levels_equally_with_several_perturbations_a_level():
    """Section 4.3.3: equal weights within a level, the same total weight for each level: with two character-,
    three word- and one sentence-level perturbation, D_avg = (mean_char + mean_word + D_sentence) / 3."""
    weak = [5, 5, 4, 5, 4, 5, 5, 4, 5, 4]
    spec = {
        "char_deletion:minor": ("character", {"Fluency": (GOOD, BAD)}),
        "typo:minor": ("character", {"Fluency": (GOOD, SAME)}),
        "word_deletion:minor": ("word", {"Fluency": (GOOD, weak)}),
        "grammar:minor": ("word", {"Fluency": (GOOD, BAD)}),
        "fictional_entities:minor": ("word", {"Fluency": (GOOD, SAME)}),
        "reorder:major": ("sentence", {"Fluency": (GOOD, weak)}),
    }
    res = dhp.analyse(_frame(spec))
    d = {r.perturbation: r.d for r in res.perturbations}
    char = (d["char_deletion:minor"] + d["typo:minor"]) / 2
    word = (d["word_deletion:minor"] + d["grammar:minor"] + d["fictional_entities:minor"]) / 3
    assert res.d_avg == pytest.approx((char + word + d["reorder:major"]) / 3)
    assert res.d_avg != pytest.approx(sum(d.values()) / len(d))  # not the plain mean over perturbations
    assert res.level_weights["typo:minor"] == pytest.approx(1 / 6) and res.level_weights[
        "grammar:minor"
    ] == pytest.approx(1 / 9)


def _appendix_e() -> str:
    text = paper("004")
    return between(text, "You will be given a summary written for an article. Your task is to rate", "- Coherence:")


def test_appendix_b_and_e_prompts_are_the_papers_and_table_2_wording_per_task():
    """Appendix B (Minor Fictional Named Entities) and Appendix E (Coherence) word for word from the paper, ending
    as printed: "Revised Summary:" and "Evaluation Score (please don't give any feedback, just give a score ONLY)
    - Coherence:" (no JSON request; the plain reply is read); Table 2's grammatical-error counts per task;
    Appendix A.3's Answer Quality definition."""
    task = TASKS["summarization"]
    p = perturb.prompts.perturbation_prompt("fictional_entities", "minor", "summarization")
    rendered = p.render(
        text_noun="summary", text_label="Summary", a_source="an article", source_noun="article", text="SUMMARY_HERE"
    )
    assert flat(rendered) == between(paper("004"), "You will be given one summary written for", "Revised Summary:")
    coh = dhp.eval_prompts(task)["Coherence"].render(source="ARTICLE_HERE", text="SUMMARY_HERE")
    assert flat(coh) == _appendix_e()
    assert "JSON" not in coh and "JSON" in dhp.eval_prompts(task, "structured")["Coherence"].template
    assert dhp.read_score("4") == (4.0, None) and dhp.read_score("Coherence: 3")[0] == 3.0

    def grammar(task_key: str, degree: str) -> str:
        return perturb.prompts.perturbation_prompt("grammar", degree, task_key).template

    for key in ("summarization", "translation"):  # Table 2: "two or more grammatical errors"
        assert "two or more grammatical errors" in grammar(key, "minor")
    assert "one or more grammatical errors" in grammar("qa", "minor")  # Table 2, answers
    assert "one grammatical error" in grammar("story", "single")  # Table 2, story endings
    qa = TASKS["qa"].metrics[0].definition
    assert qa.endswith("effectively capturing the essence of the content discussed in the paragraph.")


@pytest.mark.parametrize("task_key", sorted(TASKS))
def test_appendix_e_every_metric_prompt_ends_with_the_papers_score_line(task_key):
    """Appendix E's prompt ends "Evaluation Score (please don't give any feedback, just give a score ONLY) -
    Coherence:"; every metric's prompt of every task ends with that line, naming its own metric."""
    last = _appendix_e().rsplit("SUMMARY_HERE ", 1)[1]
    assert last.startswith("Evaluation Score") and last.endswith("- Coherence:")
    for metric, prompt in dhp.eval_prompts(TASKS[task_key]).items():
        text = flat(prompt.render(source="S", text="T"))
        assert text.endswith("T " + last.replace("- Coherence:", f"- {metric}:")), metric


def test_table_2_sumpubmed_k_is_a_built_in_task():
    """Table 2: SumPubMed uses k = 20 (minor) and 100 (major) for random deletions and typos, beside SummEval's
    10 and 50, with the summarization metrics of Table 1."""
    sp, se = TASKS["sumpubmed"], TASKS["summarization"]
    for kind in ("char_deletion", "typo"):
        assert (sp.perturbation(f"{kind}:minor").k, sp.perturbation(f"{kind}:major").k) == (20, 100)
        assert (se.perturbation(f"{kind}:minor").k, se.perturbation(f"{kind}:major").k) == (10, 50)
    assert sp.metric_names == se.metric_names == ["Coherence", "Consistency", "Fluency", "Relevance"]
    assert [p.key for p in sp.perturbations] == [p.key for p in se.perturbations]


def test_section_4_3_3_d_avg_is_empty_when_a_table_1_level_is_missing():
    """Section 4.3.3: D_avg weighs the character, word and sentence levels equally. A set without a level of the
    task's Table 1 row (no LLM-based perturbation when no model was set) gives no D_avg, with the reason,
    rather than an average renormalised over the levels left; D_min and each D still stand."""
    task = TASKS["summarization"]
    expected = {p.key: p.level for p in task.perturbations}
    df = _frame(
        {
            "typo:minor": ("character", {"Fluency": (GOOD, BAD)}),
            "reorder:major": ("sentence", {"Fluency": (GOOD, BAD)}),
        }
    )
    res = dhp.analyse(df, expected=expected)
    assert res.d_avg is None and res.d_ew_avg is None and res.d_wilson_avg is None
    assert "not comparable" in res.avg_note and "word" in res.avg_note
    assert res.d_min is not None and all(r.d is not None for r in res.perturbations)
    assert dhp.result_record(res)["D_avg_note"] == res.avg_note
    # every level present: D_avg is given
    full = pd.concat([df, _frame({"grammar:minor": ("word", {"Fluency": (GOOD, BAD)})})])
    assert dhp.analyse(full, expected=expected).d_avg is not None


def test_appendix_c_a_revoked_experts_votes_stop_counting_in_the_weights(engine):
    """Appendix C: the expert weights are the vote shares of the invited experts. An expert whose link is revoked
    no longer counts (their votes stay on record; restoring the link counts them again)."""
    with get_session(engine) as s:
        sid = sv.create_survey(TASKS["summarization"], title="", session=s)
        a, b = (sv.invite(sid, name, session=s).id for name in ("ada", "bo"))
        sv.vote(a, "typo", "Fluency", session=s)
        sv.vote(b, "typo", "Coherence", session=s)
        assert sv.weights(sid, session=s).weights["typo"]["Fluency"] == pytest.approx(0.5)
        sv.revoke(b, session=s)
        w = sv.weights(sid, session=s)
        assert w.weights["typo"]["Fluency"] == pytest.approx(1.0) and w.n_experts_voted == 1
        assert len(sv.votes_frame(sid, session=s)) == 2  # kept on record
        sv.restore(b, session=s)
        assert sv.weights(sid, session=s).weights["typo"]["Coherence"] == pytest.approx(0.5)


def test_read_score_explains_an_unreadable_reply():
    """Appendix E: the plain reply is read as a score from 1 to 5; a reply without one is no score, with why."""
    value, why = dhp.read_score("The summary is well organised.")
    assert value is None and re.search("no number", why)


TEXT = "Ada met Bo in Leeds on 4 May. They signed the deal. The council approved it. Work starts in June."


def test_table_2_rule_based_perturbations_do_what_table_2_says():
    """Table 2's rule-based perturbations: delete k alphanumeric characters; add k typos with the "typo" package;
    delete k continuous words; shuffle k sentences (k = 2 minor, all major); take another item's answer or ending,
    or the dataset's wrong ending. And each task's k as Table 2 gives it."""
    rng = random.Random(0)
    out, n = perturb.delete_characters(TEXT, 10, rng)
    assert n == 10 and len(out) == len(TEXT) - 10
    assert [c for c in out if not c.isalnum()] == [c for c in TEXT if not c.isalnum()]  # only alphanumerics go
    typoed, ops = perturb.add_typos(TEXT, 5, random.Random(1))
    assert len(ops) == 5 and typoed != TEXT
    cut, k = perturb.delete_words(TEXT, 5, random.Random(2))
    words, left = TEXT.split(), cut.split()
    assert k == 5 and len(left) == len(words) - 5
    assert any(words[:i] + words[i + 5 :] == left for i in range(len(words) - 4))  # five consecutive words
    sents = [s.strip() for s in re.split(r"(?<=\.) ", TEXT)]
    minor, order = perturb.reorder_sentences(TEXT, 2, random.Random(3))
    assert sorted(order) == [0, 1, 2, 3] and sum(i != j for i, j in enumerate(order)) == 2
    major, order = perturb.reorder_sentences(TEXT, 0, random.Random(4))
    assert sorted(re.split(r"(?<=\.) ", major)) == sorted(sents) and major != TEXT
    items = [perturb.Item("a", "First answer."), perturb.Item("b", "Second answer.", extra={"wrong_ending": "W."})]
    qa, story = TASKS["qa"], TASKS["story"]
    assert perturb.apply_rule(qa.perturbation("random_answer"), items[0], items, 0).perturbed == "Second answer."
    assert perturb.apply_rule(story.perturbation("wrong_ending"), items[1], items, 0).perturbed == "W."
    ks = {t: {p.key: p.k for p in TASKS[t].perturbations if p.k is not None} for t in ("story", "qa", "translation")}
    assert set(ks["story"].values()) == {5}  # "Delete 5 alphanumeric characters", "Add 5 random typographical errors"
    assert ks["qa"] == {"char_deletion:minor": 5, "char_deletion:major": 25, "typo:minor": 5, "typo:major": 25}
    assert (ks["translation"]["word_deletion:minor"], ks["translation"]["word_deletion:major"]) == (5, 25)
    assert (ks["translation"]["typo:minor"], ks["translation"]["typo:major"]) == (10, 50)
    summ = TASKS["summarization"]
    assert (summ.perturbation("reorder:minor").k, summ.perturbation("reorder:major").k) == (2, 0)  # 0: all


def test_section_4_3_2_expert_weights_that_do_not_sum_to_1_are_normalised_first():
    """Section 4.3.2: EW are vote shares, [0.4, 0.1, 0.5] from votes 4, 1 and 5; p_EW = 1 / sum_j (EW_j / p_j).
    Weights given as the votes themselves (summing to 10), or as any multiple of them, give the same p_EW and
    D_EW: used as they are, 10 / p_j in place of the shares would make p_EW ten times smaller."""
    df = _frame(
        {
            "typo": (
                "character",
                {
                    "Coherence": (GOOD, BAD),
                    "Consistency": (GOOD, SAME),
                    "Fluency": ([5, 4, 5, 4, 5, 4, 5, 4, 5, 4], BAD),
                },
            )
        }
    )
    p = dhp.analyse(df).perturbations[0].p_by_metric()
    want = 1 / (0.4 / p["Coherence"] + 0.1 / p["Consistency"] + 0.5 / p["Fluency"])
    for votes in (
        {"Coherence": 4, "Consistency": 1, "Fluency": 5},
        {"Coherence": 0.8, "Consistency": 0.2, "Fluency": 1},
    ):
        r = dhp.analyse(df, weights={"typo": votes}).perturbations[0]
        assert r.weights == pytest.approx({"Coherence": 0.4, "Consistency": 0.1, "Fluency": 0.5})
        assert r.p_ew == pytest.approx(want) and r.d_ew == pytest.approx(_d(want))
        assert dhp.harmonic_mean_p(p, votes) == pytest.approx(want)
