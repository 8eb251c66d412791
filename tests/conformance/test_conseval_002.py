"""ConsEval (paper 002) as the paper runs it: one test per procedure, each naming its section."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from services import conseval as ce
from services.conseval import SCALES, ModelSpec, StudyConfig
from services.prompts import conseval as prompts
from tests.conformance.paper import between, flat, paper
from tests.fakes import last_user


def _items(n: int, criterion: str = "Harmlessness") -> list[ce.ItemIn]:
    return [ce.ItemIn(criterion, f"query {i}", f"response {i}", str(i)) for i in range(n)]


def _config(backend, **kw) -> StudyConfig:
    base = dict(
        criteria=["Harmlessness"],
        scales=["5-P"],
        granularities=["short"],
        models=[ModelSpec.of(backend, "judge")],
        n_samples=0,
        n_boot=20,
        concurrency=2,
    )
    return StudyConfig(**{**base, **kw})


def _target_index(prompt: str) -> int:
    return int(re.findall(r"Query: query (\d+)", prompt)[-1])


def test_table_1_the_reply_is_the_plain_answer_after_answer_colon(engine, fake, backend):
    """Section 3.2, Table 1: the prompt ends with 'Answer:' and the model's plain reply is read; no output format
    is forced by default. Structured output is an option that asks for {"score": ...}."""
    fake.responder = lambda body: "4" if "response_format" not in body else {"score": 2}
    sid = ce.create_study(engine, _config(backend), _items(3))
    ce.run_study(engine, sid, backends={"judge": backend})
    assert fake.requests and all("response_format" not in r for r in fake.requests)
    assert all(last_user(r).endswith("Answer:") for r in fake.requests)
    assert set(ce.ratings_frame(engine, sid).value) == {4.0}

    fake.clear_requests()
    sid = ce.create_study(engine, _config(backend, answer_format="structured"), _items(3))
    ce.run_study(engine, sid, backends={"judge": backend})
    assert all("response_format" in r for r in fake.requests)
    assert set(ce.ratings_frame(engine, sid).value) == {2.0}


def test_section_7_1_dicl_examples_come_from_the_80_and_results_from_the_20(engine, fake, backend):
    """Section 7.1: the items are split 8:2 per criterion; dICL examples are drawn only from the 80%, and every
    method is scored and reported on the 20%."""
    n = 10
    its = [ce.ItemIn("Harmlessness", f"query {i}", f"response {i}", str(i), 1.0 + i % 5, "5-P") for i in range(n)]
    fake.responder = lambda body: "3"
    cfg = _config(backend, methods=["base", "dicl_r"], oracle="imported", k=3, n_samples=0)
    sid = ce.create_study(engine, cfg, its)
    st = ce.run_study(engine, sid, backends={"judge": backend})
    items = ce.items_frame(engine, sid)
    test = ce.test_instances(StudyConfig.from_dict(st.config), zip(items.id, items.criterion, strict=True))
    assert len(test) == 2  # 20% of 10 items (one definition each)
    test_idx = {int(items.set_index("id").idx[i]) for i, _ in test}
    asked = [_target_index(last_user(r)) for r in fake.requests]
    assert set(asked) == test_idx  # only the 20% is scored, by each method
    for r in fake.requests:
        prompt = last_user(r)
        if "### Example" in prompt:
            examples = prompt.split("### Target")[0]
            shown = {int(x) for x in re.findall(r"Query: query (\d+)", examples)}
            assert shown and not shown & test_idx  # never an example from the 20%
    rows = ce.results_frame(st.results)
    assert (rows[rows.kind == "ACC"].n <= 2).all()
    # leave-one-out stays available, labelled as not the paper's
    assert "8:2" in ce.SPLITS and "leave-one-out" in ce.SPLITS


def test_section_7_1_the_split_is_by_item_so_no_pair_is_on_both_sides(engine, fake, backend):
    """Section 7.1 splits the dataset 8:2 per criterion, then separates instances per definition: every definition
    of a query/response pair is on the same side, so a pair rated in the 20% is never a dICL example (with its
    oracle score) under another definition."""
    n, grans = 10, ["none", "short", "long"]
    its = [ce.ItemIn("Harmlessness", f"query {i}", f"response {i}", str(i), 1.0 + i % 5, "5-P") for i in range(n)]
    fake.responder = lambda body: "3"
    cfg = _config(backend, granularities=grans, methods=["base", "dicl_r"], oracle="imported", k=3, n_samples=0)
    sid = ce.create_study(engine, cfg, its)
    ce.run_study(engine, sid, backends={"judge": backend})
    items = ce.items_frame(engine, sid)
    test = ce.test_instances(cfg, zip(items.id, items.criterion, strict=True))
    test_items = {i for i, _ in test}
    assert len(test_items) == 2 and test == {(i, g) for i in test_items for g in grans}  # 20% of 10 items
    test_idx = {int(items.set_index("id").idx[i]) for i in test_items}
    n_dicl = 0
    for r in fake.requests:
        prompt = last_user(r)
        if "### Example" in prompt:
            n_dicl += 1
            shown = {int(x) for x in re.findall(r"Query: query (\d+)", prompt.split("### Target")[0])}
            assert shown and not shown & test_idx  # no pair of the 20%, under any definition
    assert n_dicl == 2 * len(grans)


def test_section_8_1_2_several_oracles_are_pooled_and_accuracy_is_per_oracle(engine, fake, backend):
    """Sections 3.3 and 8.1.2: evaluations of GPT-4-Turbo and Gemini-Pro are pooled for dICL examples, and
    accuracy (Pearson r) is reported against each oracle."""
    a, b = backend.with_changes(model="oracle-a"), backend.with_changes(model="oracle-b")

    def respond(body):
        i = _target_index(last_user(body))
        if body["model"] == "oracle-a":
            return str(1 + i % 5)
        if body["model"] == "oracle-b":
            return str(5 - i % 5)
        return str(1 + i % 5)

    fake.responder = respond
    cfg = _config(
        backend,
        methods=["base", "dicl_r"],
        oracle="endpoint",
        k=8,
        split="leave-one-out",
        oracle_models=[ModelSpec.of(a, "A"), ModelSpec.of(b, "B")],
    )
    sid = ce.create_study(engine, cfg, _items(10))
    st = ce.run_study(engine, sid, backends={"oracle:A": a, "oracle:B": b, "judge": backend})
    assert st.status == "done", st.error
    # pooled: a prompt's examples include both oracles' answers for one item (9 other items, 18 evaluations)
    few = [last_user(r) for r in fake.requests if "### Example" in last_user(r)]
    assert few and all(p.count("### Example") == 8 for p in few)
    pooled = any(len(set(re.findall(r"Query: (query \d+)", p.split("### Target")[0]))) < 8 for p in few)
    assert pooled
    acc = ce.results_frame(st.results).query("kind == 'ACC' and method == 'base'")
    by = dict(zip(acc.oracle, acc.value, strict=True))
    assert by["A"] == pytest.approx(1.0) and by["B"] == pytest.approx(-1.0)


def _row(kind, value, scale, oracle="GPT-4", mode="greedy", **kw):
    return {
        "kind": kind,
        "stat": "pearson",
        "value": value,
        "ci_low": None,
        "ci_high": None,
        "n": 5,
        "n_raters": 2,
        "level": None,
        "note": None,
        "model": "m",
        "method": "base",
        "mode": mode,
        "criterion": "C",
        "granularity": "short",
        "scale": scale,
        "oracle": oracle,
        **kw,
    }


def test_table_3_accuracy_is_on_the_5_point_scale_and_the_all_scales_mean_is_an_extra():
    """Table 3: accuracy is Pearson r 'with Interval Scale 1 to 5', per oracle; the mean over every scale is
    shown only as a labelled extra."""
    rows = [
        _row("ACC", 0.8, "5-P"),
        _row("ACC", 0.0, "10-P"),
        _row("ACC", 0.2, "5-P", oracle="Gemini"),
        _row("ACC", 0.6, "10-P", oracle="Gemini"),
    ]
    df = ce.results_frame({"rows": rows})
    m = ce.model_method_matrix(df, "C")
    assert m.loc["m · Base", "Accuracy r vs GPT-4 (5-P)"] == pytest.approx(0.8)
    assert m.loc["m · Base", "Accuracy r vs Gemini (5-P)"] == pytest.approx(0.2)
    extra = [c for c in m.columns if c.startswith("Extra")]
    assert m.loc["m · Base", "Extra: accuracy r vs GPT-4, mean of all scales"] == pytest.approx(0.4) and extra
    assert ce.radar_frame(df).Accuracy.iloc[0] == pytest.approx(0.5)  # 5-P only, mean of the two oracles


def test_figure_3_ic_of_greedy_and_of_sampled_answers_apart_and_gs_is_an_extra():
    """Figure 3 shows IC per decoding strategy: the greedy answers' IC and the sampled answers' IC are computed
    apart. Greedy-vs-sampled on one scale (GS) is not in the paper: it is marked as an extra."""
    cfg = StudyConfig(
        criteria=["C"],
        scales=["5-P", "5-P Likert"],
        granularities=["short"],
        models=[ModelSpec("m")],
        n_samples=2,
        n_boot=0,
    )
    items = pd.DataFrame(
        {"id": range(6), "idx": range(6), "criterion": "C", "oracle_score": np.nan, "oracle_scale": None}
    )
    rng = np.random.default_rng(0)
    rows = []
    for i in range(6):
        good = 1 + i % 5
        for sk in ("5-P", "5-P Likert"):
            rows.append((i, "m", "base", "short", sk, ce.GREEDY, float(good)))  # greedy: the same on both scales
            for s in range(2):
                rows.append((i, "m", "base", "short", sk, s, float(rng.integers(1, 6))))  # sampled: unrelated
    ratings = pd.DataFrame(rows, columns=["item_id", "rater", "method", "granularity", "scale", "sample", "value"])
    ratings = ratings.assign(raw="", problem=None)
    out = pd.DataFrame(ce.compute_rows(cfg, items, ratings, pd.DataFrame()))
    ic2 = out[out.kind == "IC2"].set_index("mode")
    assert ic2.loc["greedy", "value"] == pytest.approx(1.0)
    assert ic2.loc["sampled", "value"] < 0.9 and ic2.loc["sampled", "n"] == 12  # units: item x sample
    assert set(out[out.kind == "GS"]["mode"]) == {"extra"}
    assert "not in the paper" in ce.IC_LABELS["GS"]


@pytest.mark.parametrize("literal", ["{response}", "{options}", "{criterion}", "{query}"])
def test_table_1_and_6_item_text_is_inserted_in_one_pass(literal):
    """Tables 1 and 6: the item's query is inserted as written; a query that contains a slot name such as
    '{response}' or '{options}' stays literal instead of being replaced by the response or the options."""
    query = f"What does {literal} mean in a template?"
    p = prompts.render_rate(criterion="Helpfulness", detail="d", options="1-5", query=query, response="R")
    assert f"Query: {query}\n" in p and "Response: R\n" in p
    ex = [{"query": query, "response": "{answer}", "options": "1-5", "answer": "4"}]
    f = prompts.render_few_shot(
        criterion="Helpfulness", detail="d", options="1-5", query=query, response="R", examples=ex
    )
    assert f.count(f"Query: {query}\n") == 2 and "Response: {answer}\n" in f


def test_section_8_1_2_several_imported_oracles_feed_examples_and_accuracy_each(engine, fake, backend):
    """Sections 3.3 and 8.1.2 with the oracles' scores imported: one `score:NAME` column per oracle; their
    evaluations are pooled for dICL and accuracy is reported against each."""
    lines = ["query,response,score:gpt-4,score:gemini"] + [
        f"query {i},response {i},{1 + i % 5},{5 - i % 5}" for i in range(10)
    ]
    its = ce.read_items("\n".join(lines), "o.csv", criteria=["Harmlessness"], score_scale="5-P")
    assert its[3].more_scores == (("gpt-4", 4.0), ("gemini", 2.0))
    fake.responder = lambda body: str(1 + _target_index(last_user(body)) % 5)
    cfg = _config(backend, methods=["base", "dicl_r"], oracle="imported", k=8, split="leave-one-out")
    sid = ce.create_study(engine, cfg, its)
    st = ce.run_study(engine, sid, backends={"judge": backend})
    assert st.status == "done", st.error
    few = [last_user(r) for r in fake.requests if "### Example" in last_user(r)]
    assert few and any(len(set(re.findall(r"Query: (query \d+)", p.split("### Target")[0]))) < 8 for p in few)
    acc = ce.results_frame(st.results).query("kind == 'ACC' and method == 'base'")
    by = dict(zip(acc.oracle, acc.value, strict=True))
    assert by["gpt-4"] == pytest.approx(1.0) and by["gemini"] == pytest.approx(-1.0)
    assert st.results["missing"]["answers"] == len(ce.ratings_frame(engine, sid)) - 20  # imported are not answers


@pytest.mark.parametrize(
    ("answer", "value"),
    [
        ("Answer: 2\n\nExplanation: the response mentions 5 facts.", 2.0),
        ("**Score:** 4/5\nIt covers 3 of the 5 points.", 4.0),
        ("Final answer = 3\nTwo of the 4 claims hold.", 3.0),
        ("Answer: N/A\n3 facts are missing.", None),
        ("Answer: 9\nbecause of 2 errors", None),
    ],
)
def test_table1_answer_line_is_read_before_the_explanation(answer, value):
    """Table 1 asks for the score after "Answer:"; real models go on to explain with numbers of their own."""
    assert ce.parse_score(answer, ce.SCALES["5-P"]).value == value


# -- Krippendorff's alpha from its definition (Hayes and Krippendorff, 2007), the paper's main metric ---------
def _alpha(matrix: list[list[float]], level: str) -> float:
    """alpha = 1 - D_o / D_e over the coincidence matrix, with the nominal, ordinal or interval difference."""
    data = np.asarray(matrix, dtype=float)
    values = sorted({v for v in data.flatten() if not np.isnan(v)})
    ix = {v: i for i, v in enumerate(values)}
    o = np.zeros((len(values), len(values)))
    for unit in data.T:
        vs = [v for v in unit if not np.isnan(v)]
        for a in range(len(vs)):
            for b in range(len(vs)):
                if a != b:
                    o[ix[vs[a]], ix[vs[b]]] += 1 / (len(vs) - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()

    def delta(c: int, k: int) -> float:
        if level == "nominal":
            return float(c != k)
        if level == "interval":
            return (values[c] - values[k]) ** 2
        lo, hi = min(c, k), max(c, k)
        return (n_c[lo : hi + 1].sum() - (n_c[c] + n_c[k]) / 2) ** 2

    idx = range(len(values))
    d_o = sum(o[c, k] * delta(c, k) for c in idx for k in idx)
    d_e = sum(n_c[c] * n_c[k] * delta(c, k) for c in idx for k in idx) / (n - 1)
    return 1 - d_o / d_e


SAMPLES = {  # five items, three sampled answers each (rows: samples)
    "5-P": [[1, 2, 4, 5, 5], [1, 3, 4, 5, 4], [2, 2, 5, 5, 1]],
    "5-P Likert": [[1, 2, 4, 5, 5], [1, 3, 4, 5, 4], [2, 2, 5, 5, 1]],
    "Binary": [[0, 0, 1, 1, 1], [0, 1, 1, 1, 0], [0, 0, 1, 1, 1]],
}


def _ratings(samples: dict[str, list[list[float]]], greedy: dict[str, list[float]] | None = None) -> pd.DataFrame:
    rows = [
        (i, "m", "base", "short", sk, s, float(v))
        for sk, mat in samples.items()
        for s, answers in enumerate(mat)
        for i, v in enumerate(answers)
    ]
    rows += [
        (i, "m", "base", "short", sk, ce.GREEDY, float(v))
        for sk, vs in (greedy or {}).items()
        for i, v in enumerate(vs)
    ]
    df = pd.DataFrame(rows, columns=["item_id", "rater", "method", "granularity", "scale", "sample", "value"])
    return df.assign(raw="", problem=None)


def _cfg(scales: list[str], *, n_samples: int = 3, greedy: bool = False, oracle: str = "none") -> StudyConfig:
    return StudyConfig(
        criteria=["C"],
        scales=scales,
        granularities=["short"],
        models=[ModelSpec("m")],
        n_samples=n_samples,
        greedy=greedy,
        n_boot=0,
        oracle=oracle,
    )


def _item_frame(n: int, oracle: list[float] | None = None) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": range(n),
            "idx": range(n),
            "criterion": "C",
            "oracle_score": oracle if oracle is not None else np.nan,
            "oracle_scale": "5-P" if oracle is not None else None,
        }
    )


def test_section_4_self_consistency_is_alpha_over_the_samples_at_each_scales_level():
    """Section 4 and Table 2: SC is Krippendorff's alpha among the sampled answers of each item, at the scale's
    level of measurement: interval for the point scales, ordinal for the Likert scale, nominal for Binary."""
    out = pd.DataFrame(ce.compute_rows(_cfg(list(SAMPLES)), _item_frame(5), _ratings(SAMPLES), pd.DataFrame()))
    sc = out[out.kind == "SC"].set_index("scale")
    want = {"5-P": "interval", "5-P Likert": "ordinal", "Binary": "nominal"}
    assert sc["level"].to_dict() == want
    for sk, level in want.items():
        assert sc.loc[sk, "value"] == pytest.approx(_alpha(SAMPLES[sk], level)), sk
    assert sc.loc["5-P", "value"] != pytest.approx(sc.loc["5-P Likert", "value"])  # the same answers, other level


def test_table_4_case_3_and_case_4_map_the_scales_onto_one_interval():
    """Table 4: Case 3 compares 11-P (+) (1 to 11) with 11-P (-) (-5 to 5) and Case 4 Binary with 10-P, as
    intervals: each scale is mapped linearly onto [0, 1] (-5 and 1 are the bottom, 5 and 11 the top; No = 0,
    Yes = 1, 10-P's 1 and 10 the ends). Answers at the same place on both scales agree perfectly."""
    neg, pos, binary, ten = (SCALES[k] for k in ("11-P (NEG)", "11-P (POS)", "Binary", "10-P"))
    assert (neg.to_unit(-5), neg.to_unit(0), neg.to_unit(5)) == (0.0, 0.5, 1.0)
    assert (pos.to_unit(1), pos.to_unit(6), pos.to_unit(11)) == (0.0, 0.5, 1.0)
    assert (binary.to_unit(0), binary.to_unit(1), ten.to_unit(1), ten.to_unit(10)) == (0.0, 1.0, 0.0, 1.0)
    greedy = {
        "11-P (POS)": [1, 3, 6, 9, 11],
        "11-P (NEG)": [-5, -3, 0, 3, 5],  # the same places
        "Binary": [0, 0, 1, 1, 1],
        "10-P": [1, 1, 10, 10, 10],
    }
    cfg = _cfg(list(greedy), n_samples=0, greedy=True)
    out = pd.DataFrame(ce.compute_rows(cfg, _item_frame(5), _ratings({}, greedy), pd.DataFrame()))
    ic = out[out["mode"] == "greedy"].set_index("kind")
    assert ic.loc["IC3", "value"] == pytest.approx(1.0) and ic.loc["IC4", "value"] == pytest.approx(1.0)
    assert ic.loc["IC3", "level"] == ic.loc["IC4", "level"] == "interval"
    # one place off on four items: alpha over the mapped values, as the definition gives it
    shifted = {**greedy, "11-P (NEG)": [-4, -2, 1, 4, 5]}
    out = pd.DataFrame(ce.compute_rows(cfg, _item_frame(5), _ratings({}, shifted), pd.DataFrame()))
    ic3 = out[(out["mode"] == "greedy") & (out.kind == "IC3")].value.iloc[0]
    mapped = [[pos.to_unit(v) for v in greedy["11-P (POS)"]], [neg.to_unit(v) for v in shifted["11-P (NEG)"]]]
    assert ic3 == pytest.approx(_alpha(mapped, "interval")) and ic3 < 1


def test_section_8_1_1_sce_is_the_mean_of_the_samples_and_accuracy_is_pearson():
    """Section 8.1.1: SCE samples five scores at temperature 1.0 and averages them into one score; section 3 and
    Table 3: accuracy is the Pearson r with the oracle's scores."""
    samples = {
        "5-P": [[1, 2, 3, 4, 5, 5], [3, 2, 5, 4, 1, 5], [2, 5, 1, 4, 3, 5], [1, 2, 3, 1, 5, 4], [3, 4, 3, 2, 1, 5]]
    }
    oracle = [1.0, 2.0, 3.0, 5.0, 2.0, 5.0]
    cfg = _cfg(["5-P"], n_samples=5, oracle="imported")
    out = pd.DataFrame(ce.compute_rows(cfg, _item_frame(6, oracle), _ratings(samples), pd.DataFrame()))
    sce = np.mean(np.array(samples["5-P"], dtype=float), axis=0)
    acc = out[(out.kind == "ACC") & (out["mode"] == "sce")].iloc[0]
    want = np.corrcoef((sce - 1) / 4, (np.array(oracle) - 1) / 4)[0, 1]
    assert acc["stat"] == "pearson" and acc["value"] == pytest.approx(want)
    assert acc["value"] != pytest.approx(np.corrcoef(np.array(samples["5-P"][0]), oracle)[0, 1])  # not sample 1
    from scipy.stats import spearmanr

    assert acc["value"] != pytest.approx(spearmanr(sce, oracle).statistic)  # Pearson, not Spearman
    from services.conseval import run

    assert run.SAMPLE_TEMPERATURE == 1.0


def test_section_8_1_2_dicl_sm_samples_only_examples_on_the_targets_scale(engine, fake, backend):
    """Section 8.1.2: random sampling draws from every distilled evaluation; scale-matched sampling only from the
    examples with the same scale as the target instance."""
    its = [ce.ItemIn("Harmlessness", f"query {i}", f"response {i}", str(i), 1.0 + i % 5, "5-P") for i in range(10)]
    fake.responder = lambda body: "3"
    cfg = _config(
        backend, scales=["5-P", "10-P"], methods=["dicl_r", "dicl_sm"], oracle="imported", k=3, split="leave-one-out"
    )
    sid = ce.create_study(engine, cfg, its)
    ce.run_study(engine, sid, backends={"judge": backend})
    rat = ce.ratings_frame(engine, sid)
    rat = rat[rat.method.isin(["dicl_r", "dicl_sm"])]
    assert rat[(rat.method == "dicl_sm") & (rat.scale == "10-P")].value.isna().all()  # no oracle score on 10-P
    assert rat[(rat.method == "dicl_sm") & (rat.scale == "10-P")].problem.str.contains("on this scale").all()
    assert rat[(rat.method == "dicl_r") & (rat.scale == "10-P")].value.notna().all()  # random: any scale
    n_ten = 0
    for r in fake.requests:
        prompt = last_user(r)
        if "### Example" in prompt:
            examples, target = prompt.split("### Target")
            assert "Options: 1-10" not in examples  # the oracle scored on 5-P only
            n_ten += "Options: 1-10" in target  # dICL_r rating on 10-P with 5-P examples
    assert n_ten == 10


def test_tables_1_and_6_prompts_and_the_definitions_are_the_papers():
    """Table 1 (the default prompt) and Table 6 (the five-shot dICL prompt) word for word from the paper, and each
    criterion's short and long definitions as the appendix prints them. Table 6 prints no Query/Response lines in
    its target block; the app adds them (the model must see the pair it rates), and nothing else differs."""
    text = paper("002")
    assert flat(prompts.RATE.template) == between(
        text, "You will be given a pair of input query and response.", "Answer:"
    )
    i = text.index("Five Shot Prompt Template") + len("Five Shot Prompt Template")
    table6 = flat(text[i : text.index("```", i)])
    ex = [{"query": "{query}", "response": "{response}", "options": "{options}", "answer": "{Answer}"}] * 5
    few = prompts.render_few_shot(
        criterion="{criterion}", detail="{detail}", options="{options}", query="Q", response="R", examples=ex
    )
    assert flat(few).replace("### Target Query: Q Response: R ", "### Target ") == table6
    whole = flat(text)
    for crit in ce.CRITERIA:
        d = prompts.DEFINITIONS[crit]
        assert f"Short Definition {flat(d['short'])} Long Definition {flat(d['long'])}" in whole, crit
