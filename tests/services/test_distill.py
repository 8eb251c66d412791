"""Distillation sets (paper 003, section 4): reasoning only from correct judgements, splits by document without
leakage and by dataset, reproducible under a seed, both formats, the Table 7 row."""

from __future__ import annotations

import json

import pytest

from services.nli import distill
from services.prompts import distill as P
from services.text import InputError
from tests.support.distill import C, Row, X, add_batch, make_dataset, many, summ_nli


def sent_nli(labels: list[str | None], reasonings: list[str | None]) -> dict:
    windows = [
        {"start": i, "end": i + 1, "label": lab, "reasoning": r}
        for i, (lab, r) in enumerate(zip(labels, reasonings, strict=True))
    ]
    label = None if None in labels else (X if X in labels else C)
    return {"method": "sent-nli", "label": label, "windows": windows}


def dce(verdicts: list[str], reasons: list[str]) -> dict:
    marks = [1 if v == C else -1 for v in verdicts]
    score = (sum(marks) / len(marks) + 1) / 2
    sentences = [
        {"index": i, "text": f"s{i}", "verdict": v, "reason": r}
        for i, (v, r) in enumerate(zip(verdicts, reasons, strict=True))
    ]
    return {"rounds": [{"round": 0, "score": score, "sentences": sentences}]}


def by_item(ds: distill.DistillSet) -> dict[int, list[distill.TrainingExample]]:
    out: dict[int, list] = {}
    for e in ds.train:
        out.setdefault(e.item_id, []).append(e)
    return out


def by_item_of(examples) -> dict[int, list]:
    out: dict[int, list] = {}
    for e in examples:
        out.setdefault(e.item_id, []).append(e)
    return out


def test_reasoning_only_from_correct_judgements_and_gold_labels_for_every_item(engine):
    _, ids = make_dataset(engine, [Row(0, 1), Row(1, 0), Row(2, 1), Row(3, 0), Row(4, None)])
    bid = add_batch(
        engine,
        1,
        ids,
        [
            summ_nli(C, "Every fact is in the source."),  # right
            summ_nli(C, "WRONG-1 looks fine to me."),  # wrong: gold inconsistent
            summ_nli(X, "WRONG-2 the date differs."),  # wrong: gold consistent
            summ_nli(X, "The summary invents a second vote."),  # right
            summ_nli(C, "unlabelled item"),
        ],
        method="summ-nli",
    )
    ds = distill.build(engine, [bid], split="in-domain", seed=0, test_share=0.2, answer="text")
    everything = [*ds.train, *ds.test]
    assert all("WRONG" not in e.completion for e in everything)
    assert all("unlabelled" not in e.completion for e in everything)
    gold = {ids[0]: C, ids[1]: X, ids[2]: C, ids[3]: X}
    for e in everything:
        assert e.completion.endswith(f"Judgement: {gold[e.item_id].capitalize()}")
    train = by_item(ds)
    for item_id, exs in train.items():
        forms = sorted(e.form for e in exs)
        if item_id in (ids[0], ids[3]):  # judged right: both forms (the paper's contrastive pair)
            assert forms == ["with-reasoning", "without-reasoning"]
            w = next(e for e in exs if e.form == "with-reasoning")
            assert w.completion.startswith("Reasoning process: ") and w.prompt_version == P.WITH_REASONING.id
            assert "Reasoning process and final judgement" in w.prompt
        else:
            assert forms == ["without-reasoning"]
            assert "without any reasoning" in exs[0].prompt and exs[0].prompt_version == P.WITHOUT_REASONING.id
    # 003 section 4.2: every test item is asked both ways (I-w-R and I-wo-R), scored against its gold label
    test = by_item_of(ds.test)
    assert test and all(sorted(e.form for e in exs) == ["with-reasoning", "without-reasoning"] for exs in test.values())
    for exs in test.values():
        w = next(e for e in exs if e.form == "with-reasoning")
        assert "Reasoning process and final judgement" in w.prompt and w.prompt_version == P.WITH_REASONING.id
    assert ds.stats.n_test == len(test)
    assert ds.stats.r_ratio == pytest.approx(ds.stats.n_with_reasoning / ds.stats.n_train)
    assert any("no binary gold label" in n for n in ds.notes)


def test_sent_nli_reasoning_is_the_windows_concatenated_and_a_failed_window_gives_none(engine):
    _, ids = make_dataset(engine, [Row(0, 0), Row(1, 0), Row(2, 1)])
    bid = add_batch(
        engine,
        1,
        ids,
        [
            sent_nli([C, X], ["Window one is supported.", "Window two names the wrong mayor."]),
            sent_nli([X, None], ["The amount is wrong.", None]),  # a failed window: label unknown, no reasoning
            sent_nli([C], ["Supported."]),
        ],
        method="sent-nli",
    )
    items, _ = distill.load_items(engine, [bid])
    j = {x.item_id: x.judgements[0] for x in items}
    assert j[ids[0]].reasoning == "Window one is supported.\nWindow two names the wrong mayor."
    assert j[ids[0]].label == X and j[ids[1]].reasoning is None
    ex = distill.examples_of(next(x for x in items if x.item_id == ids[0]), train=True, answer="text")
    assert ex[0].completion == (
        "Reasoning process: Window one is supported.\nWindow two names the wrong mayor.\nJudgement: Inconsistent"
    )
    assert [e.form for e in distill.examples_of(next(x for x in items if x.item_id == ids[1]), train=True)] == [
        "without-reasoning"
    ]


def test_summ_nli_reasoning_comes_first_whatever_the_batch_order(engine):
    """003 section 4.1: Summ-NLI's reasoning when it is right, otherwise Sent-NLI's."""
    _, ids = make_dataset(engine, [Row(0, 1)])
    sent = add_batch(engine, 1, ids, [sent_nli([C], ["Sent right."])], method="sent-nli")
    summ = add_batch(engine, 1, ids, [summ_nli(C, "Summ right.")], method="summ-nli")
    items, _ = distill.load_items(engine, [sent, summ])
    assert items[0].teacher().batch_id == summ


def test_unjudged_items_train_without_reasoning_and_never_reach_the_test_set(engine):
    """003 section 4.2: documents not evaluated by the teacher are added to training, as prompts without reasoning."""
    _, ids = make_dataset(engine, [Row(d, d % 2) for d in range(12)])
    bid = add_batch(engine, 1, ids[:6], [summ_nli(C if d % 2 else X, f"r{d}") for d in range(6)], method="summ-nli")
    ds = distill.build(engine, [bid], seed=3)
    assert set(ds.manifest["test_item_ids"]) <= set(ids[:6])
    assert set(ids[6:]) <= set(ds.manifest["train_item_ids"])
    assert all(e.form == "without-reasoning" for e in ds.train if e.item_id in ids[6:])


def test_the_first_batch_that_judged_correctly_gives_the_reasoning(engine):
    _, ids = make_dataset(engine, [Row(0, 0), Row(1, 1)])
    summ = add_batch(engine, 1, ids, [summ_nli(C, "Summ says fine."), summ_nli(C, "Summ right.")], method="summ-nli")
    sent = add_batch(
        engine, 1, ids, [sent_nli([X], ["Sent finds the error."]), sent_nli([C], ["Sent right."])], method="sent-nli"
    )
    items, _ = distill.load_items(engine, [summ, sent])
    teacher = {x.item_id: x.teacher() for x in items}
    assert teacher[ids[0]].reasoning == "Sent finds the error." and teacher[ids[0]].batch_id == sent
    assert teacher[ids[1]].reasoning == "Summ right." and teacher[ids[1]].batch_id == summ


def test_dce_batches_give_the_sentence_reasons_and_the_evidence_checker_none(engine):
    _, ids = make_dataset(engine, [Row(0, 0), Row(1, 1)])
    res = [dce([C, X], ["Supported by the article.", "The article says 40, not 47."]), dce([C], ["Supported."])]
    model = add_batch(engine, 1, ids, res, method="dce-amc")
    offline = add_batch(engine, 1, ids, res, method="evidence")
    items, _ = distill.load_items(engine, [model])
    first = next(x for x in items if x.item_id == ids[0]).teacher()
    assert first.reasoning == "Supported by the article.\nThe article says 40, not 47." and first.label == X
    items, _ = distill.load_items(engine, [offline])
    assert all(x.teacher() is None for x in items)


def test_in_domain_split_is_by_document_80_20_without_leakage(engine):
    _, bid, _ = many(engine)
    ds = distill.build(engine, [bid], split="in-domain", seed=7)
    m = ds.manifest
    train_docs, test_docs = set(m["train_document_ids"]), set(m["test_document_ids"])
    assert not train_docs & test_docs
    assert (len(train_docs), len(test_docs)) == (16, 4)
    assert not set(m["train_item_ids"]) & set(m["test_item_ids"])
    items, _ = distill.load_items(engine, [bid])
    doc_of = {x.item_id: x.document_id for x in items}
    assert {doc_of[e.item_id] for e in ds.train} == train_docs
    assert {doc_of[e.item_id] for e in ds.test} == test_docs
    # every judge was right: each training item gives two examples, so reasoning is half the mix
    assert ds.stats.n_train == 2 * 16 * 3 and ds.stats.r_ratio == pytest.approx(0.5)
    assert ds.table7().iloc[0]["R-Ratio"] == "50%"


def test_the_split_and_the_files_are_reproducible_under_a_seed(engine, tmp_path):
    _, bid, _ = many(engine)
    a = distill.build(engine, [bid], seed=3)
    b = distill.build(engine, [bid], seed=3)
    c = distill.build(engine, [bid], seed=4)
    assert a.jsonl("train", "chat") == b.jsonl("train", "chat") and a.jsonl("test", "plain") == b.jsonl("test", "plain")
    assert a.manifest == b.manifest
    assert a.manifest["test_document_ids"] != c.manifest["test_document_ids"]
    pa = distill.write(a, tmp_path / "a", "chat")
    pb = distill.write(b, tmp_path / "b", "chat")
    assert [p.read_bytes() for p in pa] == [p.read_bytes() for p in pb]


def test_ood_split_tests_on_one_dataset_and_trains_on_the_others(engine):
    d1, b1, _ = many(engine, n_docs=6, name="news")
    d2, b2, _ = many(engine, n_docs=4, name="dialogue")
    ds = distill.build(engine, [b1, b2], split="ood", test_dataset_id=d1)
    items, _ = distill.load_items(engine, [b1, b2])
    ds_of = {x.item_id: x.dataset_id for x in items}
    assert {ds_of[e.item_id] for e in ds.train} == {d2} and {ds_of[e.item_id] for e in ds.test} == {d1}
    assert ds.manifest["test_dataset_id"] == d1
    default = distill.build(engine, [b1, b2], split="ood")
    assert default.manifest["test_dataset_id"] == d2  # the dataset of the last batch
    with pytest.raises(InputError, match="at least two datasets"):
        distill.build(engine, [b1], split="ood")


def test_formats_chat_and_plain(engine):
    _, bid, _ = many(engine, n_docs=5)
    ds = distill.build(engine, [bid])
    chat = [json.loads(line) for line in ds.jsonl("train", "chat").splitlines()]
    plain = [json.loads(line) for line in ds.jsonl("train", "plain").splitlines()]
    assert len(chat) == len(plain) == ds.stats.n_train
    assert all(list(r) == ["messages"] and [m["role"] for m in r["messages"]] == ["user", "assistant"] for r in chat)
    assert all(set(r) == {"prompt", "completion"} for r in plain)
    assert [r["messages"][1]["content"] for r in chat] == [r["completion"] for r in plain]
    assert all("{source text}" not in r["prompt"] and "{summary}" not in r["prompt"] for r in plain)


def test_bad_requests_are_explained(engine):
    with pytest.raises(InputError, match="does not exist"):
        distill.build(engine, [42])
    _, ids = make_dataset(engine, [Row(0, None), Row(1, None)])
    bid = add_batch(engine, 1, ids, [summ_nli(C, "a"), summ_nli(C, "b")], method="summ-nli")
    with pytest.raises(InputError, match="gold label"):
        distill.build(engine, [bid])
    _, ids = make_dataset(engine, [Row(0, 1), Row(0, 0)], name="one-doc")
    bid = add_batch(engine, 2, ids, [summ_nli(C, "a"), summ_nli(C, "b")], method="summ-nli")
    with pytest.raises(InputError, match="at least two documents"):
        distill.build(engine, [bid])


def test_json_answers_are_the_apps_summ_nli_exchange_so_a_student_plugs_into_the_app(engine):
    from services.nli import replies
    from services.prompts import nli as NP

    _, ids = make_dataset(engine, [Row(0, 0)])
    bid = add_batch(engine, 1, ids, [summ_nli(X, "The summary invents a vote.")], method="summ-nli")
    (item,), _ = distill.load_items(engine, [bid])
    with_r, without_r = distill.examples_of(item, train=True)  # json is the default
    app_prompt = NP.SUMM_NLI.render(**{"source text": item.document, "summary": item.summary})
    assert with_r.prompt == app_prompt + NP.JUDGEMENT_FORMAT.template
    assert with_r.prompt_version == f"{P.WITH_REASONING.id}+{NP.JUDGEMENT_FORMAT.id}"
    assert replies.parse_nli(json.loads(with_r.completion)) == (X, "The summary invents a vote.")
    assert replies.parse_nli(json.loads(without_r.completion)) == (X, "")
    assert without_r.prompt.endswith(P.LABEL_FORMAT.template) and "without any" in without_r.prompt


def test_labelled_items_no_batch_judged_still_give_prompts_without_reasoning(engine):
    _, ids = make_dataset(engine, [Row(d, d % 2) for d in range(10)])
    bid = add_batch(
        engine, 1, ids[:4], [summ_nli(X if d % 2 == 0 else C, f"r{d}") for d in range(4)], method="summ-nli"
    )
    items, notes = distill.load_items(engine, [bid])
    assert sorted(x.item_id for x in items) == sorted(ids)
    assert {x.item_id for x in items if x.judgements} == set(ids[:4])
    assert any("6 labelled item(s)" in n for n in notes)
    ds = distill.build(engine, [bid], seed=0)
    assert ds.stats.n_with_reasoning == sum(
        1 for x in items if x.teacher() and x.item_id in ds.manifest["train_item_ids"]
    )
    assert ds.stats.n_train == ds.stats.n_train_items + ds.stats.n_with_reasoning
