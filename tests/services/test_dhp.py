"""DHP statistics (Wilcoxon against scipy, HMP by hand, D), the rating prompts, and a run through the worker."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from db.engine import get_session
from services import dhp
from services.dhp.catalogue import TASKS, custom_task
from services.dhp.perturb import Item
from services.jobs import queue as jobs
from tests.fakes import last_user
from tests.support.dhp import council_items, judge_fluency_only

RNG = np.random.default_rng(0)


# -- Wilcoxon ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [6, 30, 100])
def test_wilcoxon_matches_scipy_one_sided(n):
    a = np.round(RNG.uniform(1, 5, n) * 5) / 5  # means of 5 ratings: ties and zero differences happen
    b = np.clip(a - RNG.choice([0, 0, 0.2, 0.4, -0.2], n), 1, 5)
    got = dhp.wilcoxon_greater(a, b, metric="m")
    ref = sps.wilcoxon(a, b, alternative="greater", zero_method="wilcox")
    assert got.p_value == pytest.approx(float(ref.pvalue)) and got.statistic == pytest.approx(float(ref.statistic))
    assert got.n_ties == int(np.sum(a == b)) and got.n_pairs == n and got.zero_method == "wilcox"


def test_wilcoxon_direction_ties_and_missing_scores():
    a, b = [5, 5, 4, 4, 5, 4, 5, 3], [3, 4, 2, 4, 1, 2, 2, 3]
    low = dhp.wilcoxon_greater(a, b)
    high = dhp.wilcoxon_greater(b, a)  # the perturbed text scored higher: no evidence at all
    assert low.p_value < 0.05 < high.p_value and low.n_ties == 2
    tied = dhp.wilcoxon_greater([3, 4, 5], [3, 4, 5])
    assert tied.p_value == 1.0 and tied.n_ties == 3 and tied.statistic is None
    gaps = dhp.wilcoxon_greater([5, float("nan"), 4, 5], [1, 2, float("nan"), 2])
    assert gaps.n_pairs == 2 and gaps.n_missing == 2


# -- combined p-values and D ----------------------------------------------------------------------------
def test_harmonic_mean_p_hand_computed():
    ps = {"coherence": 0.01, "fluency": 0.04}
    # Equal weights 1/2: 1 / (0.5/0.01 + 0.5/0.04) = 1 / 62.5
    assert dhp.harmonic_mean_p(ps) == pytest.approx(0.016)
    # The paper's unweighted form as printed: 1 / (100 + 25)
    assert dhp.paper_literal_p(ps) == pytest.approx(0.008)
    # Expert weights are normalised to sum to 1: votes 3 and 1 give 0.75 and 0.25.
    assert dhp.harmonic_mean_p(ps, {"coherence": 3, "fluency": 1}) == pytest.approx(1 / (75 + 6.25))
    # A metric without a weight counts 0; equal p-values give that p whatever the weights.
    assert dhp.harmonic_mean_p(ps, {"fluency": 2}) == pytest.approx(0.04)
    same = {"a": 0.2, "b": 0.2, "c": 0.2}
    assert dhp.harmonic_mean_p(same) == pytest.approx(0.2)
    assert dhp.harmonic_mean_p(same, {"a": 0.4, "b": 0.1, "c": 0.5}) == pytest.approx(0.2)
    assert dhp.harmonic_mean_p(ps, {"coherence": 0, "fluency": 0}) is None
    with pytest.raises(ValueError):
        dhp.harmonic_mean_p(ps, {"coherence": -1, "fluency": 1})


def test_discernment_is_one_at_p_005_and_log_base_005():
    assert dhp.discernment(0.05) == pytest.approx(1.0)
    assert dhp.discernment(0.0025) == pytest.approx(2.0)
    assert dhp.discernment(1.0) == pytest.approx(0.0)
    assert dhp.discernment(0.5) < 1 < dhp.discernment(0.01)
    assert math.isfinite(dhp.discernment(0.0))
    assert dhp.discernment(None) is None


def frame(spec: dict[str, tuple[str, dict[str, tuple[list[float], list[float]]]]]) -> pd.DataFrame:
    rows = []
    for pert, (level, metrics) in spec.items():
        for metric, (orig, pz) in metrics.items():
            for i, (o, p) in enumerate(zip(orig, pz, strict=True)):
                rows.append(
                    {
                        "item_id": f"i{i}",
                        "perturbation": pert,
                        "level": level,
                        "metric": metric,
                        "original": o,
                        "perturbed": p,
                    }
                )
    return pd.DataFrame(rows)


GOOD = [5, 5, 4, 5, 4, 5, 5, 4, 5, 5]
BAD = [2, 3, 2, 1, 3, 2, 2, 3, 1, 2]


def test_analyse_levels_weigh_equally_and_expert_weights_feed_d_ew():
    df = frame(
        {
            "typo:minor": ("character", {"fluency": (GOOD, BAD), "relevance": (GOOD, GOOD)}),
            "typo:major": ("character", {"fluency": (GOOD, BAD), "relevance": (GOOD, BAD)}),
            "reorder": ("sentence", {"fluency": (GOOD, GOOD), "relevance": (GOOD, GOOD)}),
        }
    )
    ew = {"typo": {"fluency": 1.0}, "reorder": {"fluency": 0.5, "relevance": 0.5}}
    res = dhp.analyse(df, weights=ew, model="m")
    by = {r.perturbation: r for r in res.perturbations}
    p_fl = by["typo:minor"].p_by_metric()["fluency"]
    assert by["typo:minor"].p == pytest.approx(1 / (1 / p_fl + 1 / 1.0))  # the paper's 1 / sum_j (1/p_j)
    assert by["typo:minor"].p_wilson == pytest.approx(1 / (0.5 / p_fl + 0.5 / 1.0))
    assert by["typo:minor"].p_ew == pytest.approx(p_fl)  # all weight on fluency
    # every pair tied: p_j = 1 on both metrics, so the paper's p = 1/2 (D = log_0.05 0.5) and Wilson's p = 1
    assert by["reorder"].d == pytest.approx(math.log(0.5) / math.log(0.05)) and by["reorder"].tests[0].n_ties == 10
    assert by["reorder"].d_wilson == pytest.approx(0.0)
    # Two levels: the two character perturbations share half the weight, reordering has the other half.
    assert res.level_weights == {"typo:minor": 0.25, "typo:major": 0.25, "reorder": 0.5}
    assert res.d_avg == pytest.approx(0.25 * by["typo:minor"].d + 0.25 * by["typo:major"].d + 0.5 * by["reorder"].d)
    assert res.d_min == pytest.approx(by["reorder"].d) and res.d_wilson_min == pytest.approx(0.0)
    assert res.d_ew_avg == pytest.approx(0.25 * by["typo:minor"].d_ew + 0.25 * by["typo:major"].d_ew)
    rec = dhp.result_record(res)
    assert rec["perturbations"][0]["p"]["fluency"] == pytest.approx(p_fl) and "D_EW_min" in rec


def test_analyse_rejects_bad_tables():
    with pytest.raises(ValueError, match="missing column"):
        dhp.analyse(pd.DataFrame({"item_id": [1]}))
    df = frame({"typo": ("character", {"fluency": ([5, 5], [1, 1])})})
    with pytest.raises(ValueError, match="twice"):
        dhp.analyse(pd.concat([df, df]))


# -- prompts ---------------------------------------------------------------------------------------------
def test_rating_prompts_follow_appendix_e():
    ps = dhp.eval_prompts(TASKS["summarization"])
    coh = ps["Coherence"].template
    assert coh.startswith("You will be given a summary written for an article. Your task is to rate the summary")
    assert "Evaluation Criterion: Coherence (1-5) - the collective quality of all sentences." in coh
    assert "9. Rate the Summary" in coh and coh.endswith(
        "Source Article:\n\n{source}\n\nSummary:\n\n{text}\n\n"
        "Evaluation Score (please don't give any feedback, just give a score ONLY) - Coherence:"
    )
    assert 'in the form {"score": N}' in dhp.eval_prompts(TASKS["summarization"], "structured")["Coherence"].template
    story = dhp.eval_prompts(TASKS["story"])["Consistency"].template
    assert "an ending sentence written for a four-sentence story" in story and story.endswith(
        "Ending:\n\n{text}\n\nEvaluation Score (please don't give any feedback, just give a score ONLY) - Consistency:"
    )
    assert len({p.id for p in ps.values()}) == 4 and all("@3" in p.id for p in ps.values())


# -- a run end to end, through the worker's task ----------------------------------------------------------


def test_a_run_scores_every_text_r_times_and_gives_discernment(file_engine, fake, backend, monkeypatch):
    monkeypatch.setattr("services.database.get_engine", lambda url=None: file_engine)
    items = council_items(8)
    fake.responder = judge_fluency_only({it.text for it in items})
    task = TASKS["summarization"]
    with get_session(file_engine) as s:
        sid = dhp.create_set(task, items, name="t", seed=1, session=s, only=["typo:minor", "reorder:major"])
    with get_session(file_engine) as s:
        texts = dhp.texts_frame(sid, session=s)
        assert len(texts) == 8 * 3 and texts["error"].isna().all()
        rid = dhp.create_run(sid, backend, repeats=2, seed=0, session=s)
    jobs.enqueue_dhp("run", rid)  # immediate mode in tests: runs here, as the worker would
    with get_session(file_engine) as s:
        run = dhp.get_run(rid, session=s)
        assert run.status == "done" and run.n_done == run.n_total == 24 * 4 and run.n_failed == 0
        # what the run used, for its cost: every request answered, tokens as the server counted them
        assert (run.calls, run.answered, run.cache_hits) == (24 * 4 * 2, 24 * 4 * 2, 0)
        assert run.prompt_tokens > 0 and run.completion_tokens > 0
        res = dhp.run_result(rid, session=s, weights={"typo": {"Fluency": 1}})
    # 24 texts x 4 metrics x 2 repeats, each repeat its own request.
    assert len(fake.requests) == 24 * 4 * 2
    by = {r.perturbation: r for r in res.perturbations}
    assert [r.perturbation for r in res.perturbations] == ["typo:minor", "reorder:major"]
    p = by["typo:minor"].p_by_metric()
    assert p["Fluency"] < 0.01 and p["Coherence"] == 1.0
    # The weights put everything on Fluency, the one metric that discerns: D_EW beats Wilson's equal weights 1/M
    assert by["typo:minor"].d > 1 and by["typo:minor"].d_ew > by["typo:minor"].d_wilson
    assert by["reorder:major"].d_ew is None  # no expert weight given for reordering
    # Perturbed texts were rated on their own: no request carries both a text and its original.
    for body in fake.requests:
        content = last_user(body)
        assert sum(it.text in content for it in items) <= 1
    # A second run of the same model is answered from the cache.
    fake.clear_requests()
    with get_session(file_engine) as s:
        rid2 = dhp.create_run(sid, backend, repeats=2, seed=0, session=s)
    dhp.process_run(file_engine, rid2)
    assert fake.requests == []


def test_a_model_that_cannot_be_reached_fails_the_run_with_the_reason(file_engine, closed_backend):
    items = [Item("a", "One. Two."), Item("b", "Three. Four.")]
    with get_session(file_engine) as s:
        sid = dhp.create_set(TASKS["qa"], items, name="t", seed=0, session=s, only=["typo:minor"])
        rid = dhp.create_run(sid, closed_backend, repeats=1, session=s)
    assert dhp.process_run(file_engine, rid) == "failed"
    with get_session(file_engine) as s:
        run = dhp.get_run(rid, session=s)
    assert run.status == "failed" and "Cannot reach" in run.error


@pytest.fixture
def closed_backend():
    import socket

    from services.config import BackendConfig

    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    return BackendConfig(kind="openai", base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=0, timeout=2)


def test_llm_perturbations_are_made_by_the_set_job(file_engine, fake, backend, monkeypatch):
    monkeypatch.setattr("services.database.get_engine", lambda url=None: file_engine)
    fake.responder = lambda body: "Revised: " + last_user(body).split("Summary:\n\n")[1][:20]
    items = [Item("a", "Alpha went to Rome. It rained."), Item("b", "Beta went to Oslo. It snowed.")]
    with get_session(file_engine) as s:
        sid = dhp.create_set(
            TASKS["summarization"],
            items,
            name="t",
            seed=0,
            session=s,
            backend=backend,
            only=["fictional_entities:minor", "typo:minor"],
        )
        assert dhp.get_set(sid, session=s).status == "generating"
    jobs.enqueue_dhp("perturb", sid)
    with get_session(file_engine) as s:
        assert dhp.get_set(sid, session=s).status == "ready"
        texts = dhp.texts_frame(sid, session=s)
    fne = texts[texts["perturbation"] == "fictional_entities:minor"]
    assert len(fne) == 2 and fne["text"].str.startswith("Revised: ").all()


def test_user_tasks_are_stored_and_listed(engine):
    t = custom_task(
        "dialogue",
        "Dialogue",
        text_label="Reply",
        source_label="Context",
        metrics=[("Engagingness", "Is it engaging?")],
        perturbations=[{"kind": "typo", "k": 2}],
    )
    with get_session(engine) as s:
        dhp.add_task(t, session=s)
    with get_session(engine) as s:
        assert dhp.get_task("dialogue", session=s) == t
        assert [x.key for x in dhp.list_tasks(session=s)][-1] == "dialogue"
        with pytest.raises(ValueError, match="exists already"):
            dhp.add_task(t, session=s)


def test_a_cancelled_run_stops_at_the_next_score_and_keeps_what_it_saved(file_engine, fake, backend):
    items = [Item(f"s{i}", f"Day {i} came. The rain stopped. People went out.", f"a {i}") for i in range(4)]
    with get_session(file_engine) as s:
        sid = dhp.create_set(TASKS["summarization"], items, name="t", seed=1, session=s, only=["typo:minor"])
        rid = dhp.create_run(sid, backend.with_changes(concurrency=1), repeats=1, session=s)

    def respond(body: dict) -> str:
        if len(fake.requests) == 3:  # the worker is busy on the run: someone presses Cancel
            with get_session(file_engine) as s:
                dhp.request_cancel(rid, session=s)
                assert dhp.get_run(rid, session=s).status == "running", "a running run stops in its worker"
        return "4"

    fake.responder = respond
    assert dhp.process_run(file_engine, rid) == "cancelled"
    with get_session(file_engine) as s:
        run = dhp.get_run(rid, session=s)
    assert run.status == "cancelled" and 3 <= run.n_done < run.n_total and run.finished_at is not None
    assert dhp.process_run(file_engine, rid) == "not claimed", "a cancelled run is not taken up again"
