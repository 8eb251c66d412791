"""ConsEval: scales and their mappings, score reading, alpha, the study end to end against the fake server."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from services import conseval as ce
from services import stats
from services.conseval import SCALES, ModelSpec
from services.conseval import run as ce_run
from services.jobs import runner as jobrunner
from services.prompts import conseval as prompts
from services.text import InputError
from tests.fakes import Reply, last_user
from tests.support.conseval import GOOD, config, items, options_of, scorer

# -- scales and mappings -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "unit"),
    [
        ("5-P", 1, 0.0),
        ("5-P", 5, 1.0),
        ("5-P", 4, 0.75),
        ("7-P", 4, 0.5),
        ("10-P", 1, 0.0),
        ("10-P", 10, 1.0),
        ("11-P (POS)", 6, 0.5),
        ("11-P (NEG)", -5, 0.0),
        ("11-P (NEG)", 0, 0.5),
        ("11-P (NEG)", 5, 1.0),
        ("5-P Likert", 1, 0.0),
        ("5-P Likert", 4, 0.75),
        ("Binary", 0, 0.0),
        ("Binary", 1, 1.0),
    ],
)
def test_every_scale_maps_onto_the_unit_interval(key, value, unit):
    assert SCALES[key].to_unit(value) == pytest.approx(unit)


def test_scales_of_table_2_and_their_levels():
    assert set(SCALES) == {"5-P", "7-P", "10-P", "11-P (POS)", "11-P (NEG)", "5-P Likert", "Binary"}
    assert (SCALES["11-P (NEG)"].lo, SCALES["11-P (NEG)"].hi) == (-5, 5)
    assert SCALES["5-P"].level == "interval" and SCALES["5-P Likert"].level == "ordinal"
    assert SCALES["Binary"].level == "nominal"
    assert SCALES["5-P Likert"].format(5) == "Strongly Agree" and SCALES["Binary"].format(0) == "No"
    assert SCALES["5-P"].to_unit(None) is None
    assert "Strongly Disagree = 0" in SCALES["5-P Likert"].mapping


# -- reading scores ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "key", "value"),
    [
        ("Score: 4/5", "5-P", 4.0),
        ("four", "5-P", 4.0),
        ("4.5", "5-P", 4.5),
        ("The answer is 2.", "5-P", 2.0),  # a full stop ends the sentence, not a decimal
        ("On a scale of 1-5. I give 3", "5-P", 3.0),
        ("4", "5-P", 4.0),
        (4, "5-P", 4.0),
        ("8 out of 10", "10-P", 8.0),
        ("I give it 4 out of 5 stars.", "5-P", 4.0),
        ("Rating (1-10): 7", "10-P", 7.0),
        ("-3", "11-P (NEG)", -3.0),
        ("minus two", "11-P (NEG)", -2.0),
        ("Strongly agree", "5-P Likert", 5.0),
        ("Agree.", "5-P Likert", 4.0),
        ("disagree", "5-P Likert", 2.0),
        ("Yes", "Binary", 1.0),
        ("Answer: no", "Binary", 0.0),
    ],
)
def test_scores_are_read(answer, key, value):
    parsed = ce.parse_score(answer, SCALES[key])
    assert parsed.value == value and parsed.problem is None


@pytest.mark.parametrize(
    ("answer", "key", "why"),
    [
        ("N/A", "5-P", "no score"),
        ("", "5-P", "empty"),
        ("6", "5-P", "outside the scale"),
        ("0", "5-P", "outside the scale"),
        ("4/10", "5-P", "another scale"),
        ("4 or 5", "5-P", "more than one number"),
        ("3/5 or 4/5", "5-P", "more than one number"),
        ("excellent", "5-P", "no number"),
        ("4.5", "5-P Likert", "no option"),
        ("4.5", "Binary", "no option"),
        ("1", "Binary", "no option"),
        ("Yes and no", "Binary", "more than one option"),
        ("-6", "11-P (NEG)", "outside the scale"),
        (True, "Binary", "true/false"),
    ],
)
def test_unreadable_or_out_of_scale_scores_are_missing_with_the_raw_answer(answer, key, why):
    parsed = ce.parse_score(answer, SCALES[key])
    assert parsed.value is None
    assert why in parsed.problem
    assert parsed.raw == (answer if isinstance(answer, str) else json.dumps(answer))


def test_the_structured_answer_is_unwrapped_without_coercion():
    assert ce.answer_of({"score": "Score: 4/5"}) == "Score: 4/5"
    assert ce.answer_of({"score": 4.5}) == "4.5"
    assert ce.answer_of(7) == "7"
    with pytest.raises(ValueError):
        ce.answer_of([1, 2])


# -- alpha: the krippendorff package's documented examples ---------------------------------------

DOC = [
    [np.nan, np.nan, np.nan, np.nan, np.nan, 3, 4, 1, 2, 1, 1, 3, 3, np.nan, 3],
    [1, np.nan, 2, 1, 3, 3, 4, 3, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan],
    [np.nan, np.nan, 2, 1, 3, 4, 4, np.nan, 2, 1, 1, 3, 3, np.nan, 4],
]
ORDINAL = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
    [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
]


@pytest.mark.parametrize(
    ("data", "level", "expected", "tol"),
    [
        (DOC, "nominal", 0.691358, 1e-6),
        (DOC, "interval", 0.810845, 1e-6),
        (ORDINAL, "ordinal", 0.815, 5e-4),
    ],
)
def test_alpha_matches_the_documented_examples_with_missing_values(data, level, expected, tol):
    res = stats.krippendorff_alpha(data, level, n_boot=200, seed=1)
    assert res.alpha == pytest.approx(expected, abs=tol)
    assert res.ci_low is not None and res.ci_low <= res.alpha <= res.ci_high
    assert res.n_raters == len(data)


def test_alpha_explains_instead_of_nan():
    same = stats.krippendorff_alpha([[3, 3, 3], [3, 3, 3]], "interval", n_boot=10)
    one = stats.krippendorff_alpha([[1, 2, 3], [np.nan] * 3], "interval", n_boot=10)
    few = stats.krippendorff_alpha([[1, 2, np.nan], [np.nan, 2, 3]], "interval", n_boot=10)
    for res, why in ((same, "same value"), (one, "one rater"), (few, "unit")):
        assert res.alpha is None and why in res.note


# -- prompts -------------------------------------------------------------------------------------


def test_table_1_and_table_6_prompts():
    p = prompts.render_rate(
        criterion="Logicality", detail="correct reasoning", options="1-5", query="Q?", response="R."
    )
    assert p.startswith("You will be given a pair of input query and response.")
    assert "Logicality:correct reasoning" in p and "Options: 1-5" in p and p.endswith("Answer:")
    ex = [{"query": f"q{i}", "response": f"r{i}", "options": "1-5", "answer": str(i)} for i in range(1, 6)]
    few = prompts.render_few_shot(criterion="C", detail="d", options="1-7", query="TQ", response="TR", examples=ex)
    assert few.count("### Example") == 5 and "### Target" in few and "Answer: 5" in few
    assert few.index("### Target") < few.index("TQ") and few.rstrip().endswith("Answer:")
    for crit in ce.CRITERIA:
        assert prompts.DEFINITIONS[crit]["short"] and len(prompts.DEFINITIONS[crit]["long"].split()) > 50


# -- the study against the fake server -----------------------------------------------------------


def test_a_study_end_to_end(engine, fake, backend):
    fake.responder = scorer(noisy=True)
    cfg = config(backend)
    sid = ce.create_study(engine, cfg, items())
    st = ce.run_study(engine, sid, backends={"judge": backend})
    assert st.status == "done", st.error
    n_calls = 6 * 7 * 2 * (3 + 1)
    assert st.n_planned == n_calls and st.n_done == n_calls and st.calls == n_calls
    assert st.answered == n_calls and st.prompt_tokens > 0 and st.completion_tokens > 0  # for its actual cost
    priced = backend.with_changes(price_input_per_million=1.0, price_output_per_million=4.0)
    spent = ce.study_spent(st, priced)
    assert spent.cost_usd == pytest.approx((st.prompt_tokens * 1.0 + st.completion_tokens * 4.0) / 1e6)
    temps = sorted({r["temperature"] for r in fake.requests})
    assert temps == [0.0, 1.0]
    assert all(r["max_tokens"] == cfg.max_tokens for r in fake.requests)
    df = ce.results_frame(st.results)
    sc = df[(df.kind == "SC") & (df.granularity == "none")]
    assert set(sc.scale) == set(cfg.scales)
    levels = dict(zip(sc.scale, sc.level, strict=True))
    assert levels["5-P"] == "interval" and levels["5-P Likert"] == "ordinal" and levels["Binary"] == "nominal"
    # the noisy judge still separates good from bad: high but not perfect alpha on numeric scales
    five = sc[sc.scale == "5-P"].iloc[0]
    assert 0 < five.value < 1 and five.ci_low <= five.value <= five.ci_high and five.n == 6
    # labels are answered without noise: every sample the same per item, alpha 1
    assert sc[sc.scale == "Binary"].iloc[0].value == pytest.approx(1.0)
    ic = df[df.kind.isin(["IC1", "IC2", "IC3", "IC4"])]
    assert set(ic.kind) == {"IC1", "IC2", "IC3", "IC4"} and set(ic["mode"]) == {"greedy", "sampled", "sce"}
    assert (ic.value > 0.5).all()
    assert set(df[df.kind == "GS"].scale) == set(cfg.scales)
    # a second run asks nothing: every answer is saved, and cached
    fake.clear_requests()
    ce.reopen(engine, sid)
    again = ce.run_study(engine, sid, backends={"judge": backend})
    assert again.status == "done" and fake.requests == []


def test_odd_answers_are_missing_with_the_raw_answer_and_alpha_explains(engine, fake, backend):
    fake.responder = lambda body: "N/A" if "question 0" in last_user(body) else "3"
    cfg = config(backend, scales=["5-P"], granularities=["none"], n_samples=2)
    sid = ce.create_study(engine, cfg, items(4))
    st = ce.run_study(engine, sid, backends={"judge": backend})
    ratings = ce.ratings_frame(engine, sid)
    miss = ratings[ratings.value.isna()]
    assert len(miss) == 3 and set(miss.raw) == {"N/A"} and miss.problem.str.contains("no score").all()
    sc = ce.results_frame(st.results).query("kind == 'SC'").iloc[0]
    assert pd_isna(sc.value) and "same value" in sc.note
    assert st.results["missing"]["missing"] == 3


def pd_isna(v) -> bool:
    return v is None or v != v


def test_an_unreachable_model_fails_the_study_with_a_message(engine, backend, closed_backend):
    cfg = config(backend, scales=["5-P"], granularities=["none"], n_samples=0)
    sid = ce.create_study(engine, cfg, items(2))
    st = ce.run_study(engine, sid, backends={"judge": closed_backend})
    assert st.status == "failed" and "Cannot reach" in st.error


@pytest.fixture
def closed_backend(backend):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return backend.with_changes(base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)


@pytest.mark.parametrize("method", ["dicl_r", "dicl_sm"])
def test_dicl_draws_k_oracle_examples_from_other_items(engine, fake, backend, method):
    fake.responder = scorer()
    cfg = config(
        backend,
        scales=["5-P", "Binary"],
        granularities=["short"],
        n_samples=0,
        methods=["base", method],
        oracle="imported",
        k=2,
        split="leave-one-out",
    )
    sid = ce.create_study(engine, cfg, items(6, scored=True))
    st = ce.run_study(engine, sid, backends={"judge": backend})
    assert st.status == "done", st.error
    few = [last_user(r) for r in fake.requests if "### Example" in last_user(r)]
    assert few
    for p in few:
        assert p.count("### Example") == 2
        target = p.rsplit("### Target", 1)[1]
        q = re.search(r"Query: (question \d+)", target).group(1)
        examples = p.split("### Target")[0]
        assert q + "\n" not in examples  # never the target item itself
        if method == "dicl_sm":
            # imported scores are on 5-P only: a binary target has no scale-matched example
            assert "Options: 1-5" in examples and options_of(p) == "1-5"
    if method == "dicl_sm":
        r = ce.ratings_frame(engine, sid)
        binary = r[(r.method == "dicl_sm") & (r.scale == "Binary")]
        assert binary.value.isna().all() and binary.problem.str.contains("no oracle example").all()
    acc = ce.results_frame(st.results).query("kind == 'ACC' and method == 'base' and scale == '5-P'").iloc[0]
    assert acc.value == pytest.approx(1.0) and acc.n == 6


def test_an_endpoint_oracle_is_asked_first_and_gives_accuracy(engine, fake, backend):
    fake.responder = scorer()
    cfg = config(
        backend,
        scales=["5-P"],
        granularities=["none"],
        n_samples=2,
        methods=["base", "dicl_sm"],
        oracle="endpoint",
        oracle_model=ModelSpec.of(backend, "oracle-model"),
        k=3,
        split="leave-one-out",
    )
    sid = ce.create_study(engine, cfg, items(6))
    st = ce.run_study(engine, sid, backends={"judge": backend, "oracle": backend})
    assert st.status == "done", st.error
    first_six = [last_user(r) for r in fake.requests[:6]]
    assert all("### Example" not in p for p in first_six)
    df = ce.results_frame(st.results)
    acc = df[(df.kind == "ACC") & (df.method == "base") & (df["mode"] == "greedy")].iloc[0]
    assert acc.value == pytest.approx(1.0)
    matrix = ce.model_method_matrix(df, "Helpfulness")
    assert {"judge · Base", "judge · SCE", "judge · dICL_sm", "judge · dICL_sm & SCE"} <= set(matrix.index)
    assert "SC" in matrix.columns and "Accuracy r vs oracle-model (5-P)" in matrix.columns


def test_cancel_stops_between_chunks(engine, fake, backend, monkeypatch):
    fake.responder = scorer()
    monkeypatch.setattr(ce_run, "CHUNK", 5)
    cfg = config(backend, scales=["5-P"], granularities=["none"], n_samples=4)
    sid = ce.create_study(engine, cfg, items(6))
    st = ce.run_study(
        engine, sid, backends={"judge": backend}, on_progress=lambda done, total: ce.request_cancel(engine, sid)
    )
    assert st.status == "cancelled" and 0 < st.n_done < st.n_planned
    ce.reopen(engine, sid)
    st = ce.run_study(engine, sid, backends={"judge": backend})
    assert st.status == "done" and st.n_done == st.n_planned


def test_bad_setups_are_refused_with_a_message(engine, backend):
    with pytest.raises(InputError, match="oracle"):
        ce.create_study(engine, config(backend, methods=["dicl_r"]), items())
    with pytest.raises(InputError, match="n >= 2"):
        ce.create_study(engine, config(backend, n_samples=1), items())
    with pytest.raises(InputError, match="No items for"):
        ce.create_study(engine, config(backend, criteria=["Helpfulness", "Logicality"]), items())
    with pytest.raises(InputError, match="No long definition"):
        ce.create_study(engine, config(backend, criteria=["Tone"]), items(criterion="Tone"))
    own = config(backend, criteria=["Tone"], definitions={"Tone": {"short": "polite", "long": "polite and warm"}})
    assert ce.create_study(engine, own, items(criterion="Tone"))


def test_reading_items_from_jsonl_and_csv():
    jsonl = (
        '{"query": "q1", "response": "r1", "score": "4"}\n'
        '{"query": "q2", "response": "r2", "criterion": "Factuality"}\n'
    )
    got = ce.read_items(jsonl, "x.jsonl", criteria=["Helpfulness", "Factuality"], score_scale="5-P")
    assert [(i.criterion, i.query, i.oracle_score) for i in got] == [
        ("Helpfulness", "q1", 4.0),
        ("Factuality", "q1", 4.0),
        ("Factuality", "q2", None),
    ]
    array = '[{"query": "q", "response": "r"}, {"query": "q2", "response": "r2"}]'
    assert len(ce.read_items(array, "x.json", criteria=["Helpfulness"])) == 2
    csv_text = "query,response,human_score\nq,r,Yes\n"
    assert ce.read_items(csv_text, "x.csv", criteria=["Helpfulness"], score_scale="Binary")[0].oracle_score == 1.0
    for bad, why in (
        ('{"query": "q"}\n', "missing column"),
        ("not json\n", "not valid JSON"),
        ('{"query": "q", "response": "r", "score": 9}\n', "cannot be used"),
    ):
        with pytest.raises(InputError, match=why):
            ce.read_items(bad, "bad.jsonl", criteria=["Helpfulness"], score_scale="5-P")


def test_the_bundled_sample_set():
    data = ce.load_sample_items()
    assert set(data) == set(ce.CRITERIA)
    for rows in data.values():
        assert 8 <= len(rows) <= 12
        assert len({r["id"] for r in rows}) == len(rows)


def test_human_raters_links_ratings_and_agreement(engine, fake, backend):
    fake.responder = scorer()
    cfg = config(backend, scales=["5-P", "Binary"], granularities=["long"], n_samples=0)
    sid = ce.create_study(engine, cfg, items(6))
    ce.run_study(engine, sid, backends={"judge": backend})
    ada, bob = ce.add_rater(engine, sid, "ada"), ce.add_rater(engine, sid, "bob")
    assert ada.token != bob.token and len(ada.token) >= 30
    with pytest.raises(InputError, match="exists already"):
        ce.add_rater(engine, sid, "ada")
    ids = ce.items_frame(engine, sid).id.tolist()
    for n, item_id in enumerate(ids):
        good = n % 2 == 0
        ce.save_human_rating(engine, ada.id, item_id, "5-P", 5 if good else 1)
        ce.save_human_rating(engine, bob.id, item_id, "5-P", 4 if good else 2)
        ce.save_human_rating(engine, ada.id, item_id, "Binary", 1 if good else 0)
    ce.save_human_rating(engine, ada.id, ids[0], "5-P", 4)  # a change replaces the earlier rating
    with pytest.raises(InputError, match="not on the 5-P scale"):
        ce.save_human_rating(engine, ada.id, ids[0], "5-P", 6)
    assert {r.name: r.n_rated for r in ce.list_raters(engine, sid)} == {"ada": 12, "bob": 6}
    ce.refresh_results(engine, sid)
    df = ce.results_frame(ce.get_study(engine, sid).results)
    hum = df[(df.kind == "HUMAN") & (df.scale == "5-P")].iloc[0]
    assert hum.value > 0.8 and hum.n_raters == 2
    single = df[(df.kind == "HUMAN") & (df.scale == "Binary")].iloc[0]
    assert single.value is None or single.value != single.value
    assert "one rater" in single.note
    hm = df[(df.kind == "HUMAN-MODEL") & (df.scale == "5-P")].iloc[0]
    assert hm.model == "judge" and hm.value > 0.8
    # revoking a link: it stops working, the ratings stay
    ce.revoke_rater(engine, bob.id)
    assert ce.rater_by_token(engine, bob.token) is None and ce.rater_by_token(engine, ada.token).name == "ada"
    with pytest.raises(InputError, match="not valid"):
        ce.save_human_rating(engine, bob.id, ids[0], "5-P", 3)
    assert len(ce.human_ratings_frame(engine, sid)) == 18


def test_human_oracle_feeds_accuracy(engine, fake, backend):
    fake.responder = scorer()
    cfg = config(backend, scales=["5-P"], granularities=["long"], n_samples=0, oracle="humans")
    sid = ce.create_study(engine, cfg, items(6))
    ada = ce.add_rater(engine, sid, "ada")
    for n, item_id in enumerate(ce.items_frame(engine, sid).id):
        ce.save_human_rating(engine, ada.id, int(item_id), "5-P", 5 if n % 2 == 0 else 2)
    st = ce.run_study(engine, sid, backends={"judge": backend})
    acc = ce.results_frame(st.results).query("kind == 'ACC'").iloc[0]
    assert acc.value == pytest.approx(1.0) and acc.oracle == "humans"


def test_dicl_answers_wait_for_human_examples_and_are_asked_again(engine, fake, backend):
    fake.responder = scorer()
    cfg = config(
        backend,
        scales=["5-P"],
        granularities=["long"],
        n_samples=0,
        methods=["dicl_sm"],
        oracle="humans",
        k=2,
        split="leave-one-out",
    )
    sid = ce.create_study(engine, cfg, items(4))
    st = ce.run_study(engine, sid, backends={"judge": backend})
    assert st.status == "done" and fake.requests == [] and ce.n_without_examples(engine, sid) == 4
    ada = ce.add_rater(engine, sid, "ada")
    for n, item_id in enumerate(ce.items_frame(engine, sid).id):
        ce.save_human_rating(engine, ada.id, int(item_id), "5-P", 5 if n % 2 == 0 else 2)
    assert ce.forget_without_examples(engine, sid) == 4
    st = ce.run_study(engine, sid, backends={"judge": backend})
    assert st.status == "done" and st.n_done == 4 and len(fake.requests) == 4
    assert all(last_user(r).count("### Example") == 2 for r in fake.requests)
    assert ce.n_without_examples(engine, sid) == 0


def test_delete_study_removes_everything(engine, fake, backend):
    fake.responder = scorer()
    sid = ce.create_study(engine, config(backend, scales=["5-P"], granularities=["none"], n_samples=0), items(2))
    ce.run_study(engine, sid, backends={"judge": backend})
    r = ce.add_rater(engine, sid, "ada")
    ce.save_human_rating(engine, r.id, int(ce.items_frame(engine, sid).id[0]), "5-P", 3)
    assert ce.delete_study(engine, sid)
    assert ce.get_study(engine, sid) is None and ce.ratings_frame(engine, sid).empty
    assert ce.human_ratings_frame(engine, sid).empty and ce.list_raters(engine, sid) == []


def test_a_retry_reply_is_not_needed_for_plain_text(engine, fake, backend):
    """A server without structured output may answer a bare number: it is read as the score."""
    fake.responder = lambda body: Reply(content="4")
    sid = ce.create_study(engine, config(backend, scales=["5-P"], granularities=["none"], n_samples=0), items(2))
    ce.run_study(engine, sid, backends={"judge": backend})
    assert ce.ratings_frame(engine, sid).value.tolist() == [4.0, 4.0]


# -- the command line ----------------------------------------------------------------------------


def test_cli_conseval_writes_every_alpha_with_interval_and_n(fake, monkeypatch, tmp_path, capsys):
    import cli

    fake.responder = scorer(noisy=True)
    monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    data = tmp_path / "items.jsonl"
    data.write_text(
        "\n".join(
            json.dumps({"query": f"q{i}", "response": f"{GOOD if i % 2 else 'bad'} {i}", "score": 5 if i % 2 else 1})
            for i in range(6)
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out.json"
    code = cli.main(
        [
            "conseval",
            "--input",
            str(data),
            "--criteria",
            "helpfulness",
            "--scales",
            "5p,7-P,likert",
            "--samples",
            "3",
            "--definitions",
            "none,short",
            "--oracle",
            "imported",
            "--score-scale",
            "5p",
            "--boot",
            "30",
            "--output",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["status"] == "done" and report["calls"] == 6 * 3 * 2 * 4
    sc = [r for r in report["results"] if r["kind"] == "SC"]
    assert len(sc) == 3 * 2
    assert all({"value", "ci_low", "ci_high", "n", "level"} <= set(r) and r["n"] == 6 for r in sc)
    assert {r["kind"] for r in report["results"]} == {"SC", "GS", "IC2", "ACC"}
    assert report["mappings"]["11-P (NEG)"].startswith("(x - (-5)) / 10")
    assert cli.main(["conseval", "--criteria", "Helpfulness", "--scales", "12-P", "--samples", "2"]) == 2
    assert "unknown scale" in capsys.readouterr().err


# -- figures (pure functions, read through fig.data and fig.layout) ------------------------------


def finished_results(engine, fake, backend) -> tuple[int, object]:
    fake.responder = scorer(noisy=True)
    cfg = config(backend, criteria=["Helpfulness", "Conciseness"], n_samples=3, oracle="imported")
    its = items(4, "Helpfulness", scored=True) + items(4, "Conciseness", scored=True)
    sid = ce.create_study(engine, cfg, its)
    st = ce.run_study(engine, sid, backends={"judge": backend})
    return sid, ce.results_frame(st.results)


def test_figures_show_alphas_with_intervals_by_scale_definition_and_criterion(engine, fake, backend):
    from services.figures.conseval import make_ic_figure, make_matrix_figure, make_radar_figure, make_sc_figure

    _, df = finished_results(engine, fake, backend)
    d = df[(df.model == "judge") & (df.variant == "Base")]
    fig = make_sc_figure(d)
    assert [a.text for a in fig.layout.annotations] == ["Helpfulness", "Conciseness"]
    assert {t.name for t in fig.data} == {"definition: none", "definition: long"}
    bar = next(t for t in fig.data if t.name == "definition: none" and t.xaxis == "x")
    assert list(bar.x) == ["5-P", "7-P", "11-P (POS)", "5-P Likert", "11-P (NEG)", "Binary", "10-P"]
    row = d[(d.kind == "SC") & (d.criterion == "Helpfulness") & (d.granularity == "none") & (d.scale == "5-P")].iloc[0]
    assert bar.y[0] == pytest.approx(row.value)
    assert bar.error_y.array[0] == pytest.approx(row.ci_high - row.value)
    ic = make_ic_figure(d)
    # Greedy vs sampled: one bar per scale, never an average of α over scales.
    gs_scales = d[(d.kind == "GS") & (d.criterion == "Helpfulness") & (d.granularity == "none")].scale
    assert set(ic.data[0].x) == {"IC1", "IC2", "IC3", "IC4"} | {f"GS · {s}" for s in gs_scales}
    gs_row = d[(d.kind == "GS") & (d.criterion == "Helpfulness") & (d.granularity == "none")].iloc[0]
    assert ic.data[0].y[list(ic.data[0].x).index(f"GS · {gs_row.scale}")] == pytest.approx(gs_row.value)
    matrix = ce.model_method_matrix(df, "Helpfulness")
    mx = make_matrix_figure(matrix)
    assert list(mx.data[0].y) == list(matrix.index) and "SC" in list(mx.data[0].x)
    radar = make_radar_figure(ce.radar_frame(df))
    assert len(radar.data) == 3 and set(radar.data[0].theta) == {"Helpfulness", "Conciseness"}
    assert radar.data[0].name == "judge"


def test_an_undefined_alpha_is_drawn_hatched_with_its_reason():
    from services.figures.conseval import make_sc_figure

    df = ce.results_frame(
        {
            "rows": [
                {
                    "kind": "SC",
                    "value": None,
                    "ci_low": None,
                    "ci_high": None,
                    "n": 3,
                    "note": "Every rating is the same",
                    "model": "m",
                    "method": "base",
                    "mode": "single",
                    "criterion": "C",
                    "granularity": "short",
                    "scale": "5-P",
                },
                {
                    "kind": "SC",
                    "value": 0.5,
                    "ci_low": 0.2,
                    "ci_high": 0.7,
                    "n": 3,
                    "note": None,
                    "model": "m",
                    "method": "base",
                    "mode": "single",
                    "criterion": "C",
                    "granularity": "short",
                    "scale": "7-P",
                },
            ]
        }
    )
    bar = make_sc_figure(df).data[0]
    assert list(bar.text) == ["n/a", "0.50"]
    assert bar.marker.pattern.shape[0] and not bar.marker.pattern.shape[1]
    assert bar.y[0] > 0, "a bar of height zero draws no hatching: the undefined value must have a bar to hatch"
    assert bar.y[1] == 0.5 and bar.error_y.array[0] is None
    assert "Every rating is the same" in bar.hovertext[0]


def test_two_models_are_compared_side_by_side(engine, fake, backend):
    fake.responder = scorer(noisy=True)
    b1, b2 = backend.with_changes(model="model-a"), backend.with_changes(model="model-b")
    cfg = config(
        backend,
        scales=["5-P", "5-P Likert"],
        granularities=["none"],
        n_samples=2,
        models=[ModelSpec.of(b1, "A"), ModelSpec.of(b2, "B")],
    )
    sid = ce.create_study(engine, cfg, items(4))
    st = ce.run_study(engine, sid, backends={"A": b1, "B": b2})
    assert st.status == "done" and st.calls == 2 * 4 * 2 * 3
    assert {r["model"] for r in fake.requests} == {"model-a", "model-b"}
    df = ce.results_frame(st.results)
    assert set(df[df.kind == "SC"].model) == {"A", "B"}
    rows = {f"{m} · {v}" for m in "AB" for v in ("Base", "Base (sampled)", "SCE")}
    assert set(ce.model_method_matrix(df, "Helpfulness").index) == rows
    assert set(ce.radar_frame(df).model) == {"A", "B"}


def test_a_study_left_running_by_a_dead_worker_is_recovered_once(engine, fake, backend):
    from datetime import timedelta

    from sqlalchemy import update

    from db.models import ConsevalStudy, utcnow

    fake.responder = scorer()
    sid = ce.create_study(engine, config(backend, scales=["5-P"], granularities=["none"], n_samples=2), items(3))

    def set_running(beat):
        with engine.begin() as conn:
            conn.execute(
                update(ConsevalStudy).where(ConsevalStudy.id == sid).values(status="running", heartbeat_at=beat)
            )

    set_running(utcnow())  # a live worker is on it: a duplicate task does nothing, recovery leaves it
    assert ce.run_study(engine, sid, backends={"judge": backend}).n_done == 0 and fake.requests == []
    assert ce.recover(engine) == []
    set_running(utcnow() - jobrunner.stale_limit() - timedelta(seconds=1))  # its worker went quiet
    assert ce.recover(engine) == [sid] and ce.recover(engine) == []
    st = ce.run_study(engine, sid, backends={"judge": backend})
    assert st.status == "done" and st.n_done == 9


def test_a_study_stopped_by_a_refused_key_counts_the_requests_it_sent(engine, fake, backend):
    """The call that ended the study was sent: its request is in the study's count, as the server saw it."""
    cfg = config(backend, scales=["5-P"], granularities=["none"], n_samples=0)
    sid = ce.create_study(engine, cfg, items(2))
    for _ in range(50):
        fake.enqueue_status(403, body={"error": {"message": "forbidden"}})
    st = ce.run_study(engine, sid, backends={"judge": backend.with_changes(max_retries=0)})
    assert st.status == "failed" and "refused access" in st.error
    assert len(fake.requests) > 0 and st.calls == len(fake.requests)
