"""DHP (paper 004) as the paper runs it: one test per procedure, each naming its section."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from db.engine import get_session
from services import dhp
from services.dhp import perturb
from services.dhp import survey as sv
from services.dhp.catalogue import TASKS

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


def _flat(text: str) -> str:
    return " ".join(text.replace("’", "'").split())


def test_section_4_3_2_d_paper_uses_the_printed_unweighted_hmp_beside_d():
    """Section 4.3.2 prints the unweighted combination p = 1 / sum_j (1/p_j) and 4.3.3 D = log_0.05(p): D_paper,
    its D_avg and D_min are reported beside D (Wilson's HMP with weights 1/M), with both formulas, in the JSON."""
    df = _frame(
        {
            "typo:minor": ("character", {"Fluency": (GOOD, BAD), "Relevance": (GOOD, SAME)}),
            "reorder:major": ("sentence", {"Fluency": (GOOD, BAD), "Relevance": (GOOD, BAD)}),
        }
    )
    res = dhp.analyse(df)
    for r in res.perturbations:
        ps = r.p_by_metric().values()
        printed = 1 / sum(1 / p for p in ps)
        assert r.d_paper == pytest.approx(math.log(printed) / math.log(0.05))
        assert r.d_paper == pytest.approx(r.d + math.log(len(ps)) / math.log(20))  # M times smaller p
    by = {r.perturbation: r for r in res.perturbations}
    assert res.d_paper_avg == pytest.approx((by["typo:minor"].d_paper + by["reorder:major"].d_paper) / 2)
    assert res.d_paper_min == pytest.approx(min(r.d_paper for r in res.perturbations))
    rec = dhp.result_record(res)
    assert {"D_paper_avg", "D_paper_min", "D_avg", "D_min"} <= set(rec)
    assert "1 / sum_j (1/p_j)" in rec["formula"]["D_paper"] and "log_0.05" in rec["formula"]["D"]
    assert {"D", "D_paper"} <= set(dhp.summary_frame([res]).columns)


PAPER_FNE = """You will be given one summary written for an article. Your task is to adjust the summary by
implementing a specific change. Please make sure you read and understand these instructions carefully.
Adjustment: Please substitute only one critical named entity within the summary (e.g., a name, a location, a
specific number, a technical term, etc.) with a fictional counterpart. Adjustment Steps: 1. Identify the critical
named entity within the summary. This could be a person’s name, a location, a specific number, or any other
specific detail that is crucial to the summary. 2. Create a fictional counterpart for the identified entity. This
could be a fictional name, a fictional location, a fictional number, a fictional technical term etc. Make sure
that the fictional counterpart is appropriate and fits within the context of the summary. 3. Replace the
identified entity with its fictional counterpart in the summary. Ensure that the replacement is grammatically
correct and maintains the overall meaning and flow of the summary. 4. Review the adjusted summary to ensure that
it still makes sense and conveys the main points of the article, despite the change in one critical named
entity. Summary: SUMMARY_HERE Revised Summary:"""

PAPER_COHERENCE_END = """9. Rate the Summary: Based on the above steps, assign a score between 1-5 for coherence.
- 1: Very incoherent. The summary lacks structure, has sudden jumps, and is difficult to follow. - 2: Somewhat
incoherent. The summary has some semblance of structure, but has significant flaws in flow and organization. - 3:
Neutral. The summary is decently organized, with minor issues in flow and structure. - 4: Mostly coherent. The
summary is well-structured with very few minor coherence issues. - 5: Highly coherent. The summary is excellently
organized, flows seamlessly, and builds information logically from start to end. Source Article: ARTICLE_HERE
Summary: SUMMARY_HERE"""


def test_appendix_b_and_e_prompts_are_the_papers_and_table_2_wording_per_task():
    """Appendix B (Minor Fictional Named Entities) and Appendix E (Coherence) word for word, ending as printed
    (no JSON request; the plain reply is read); Table 2's grammatical-error counts per task; Appendix A.3's
    Answer Quality definition."""
    task = TASKS["summarization"]
    p = perturb.prompts.perturbation_prompt("fictional_entities", "minor", "summarization")
    rendered = p.render(
        text_noun="summary", text_label="Summary", a_source="an article", source_noun="article", text="SUMMARY_HERE"
    )
    assert _flat(rendered) == _flat(PAPER_FNE)
    coh = dhp.eval_prompts(task)["Coherence"].render(source="ARTICLE_HERE", text="SUMMARY_HERE")
    assert _flat(coh).startswith("You will be given a summary written for an article. Your task is to rate")
    assert _flat(coh).endswith(_flat(PAPER_COHERENCE_END))
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
    assert res.d_avg is None and res.d_ew_avg is None and res.d_paper_avg is None
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
