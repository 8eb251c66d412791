"""Perturbations do what they claim, at Table 2's k, and are identical under the same seed."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from services.dhp import perturb
from services.dhp.catalogue import TASKS, Perturbation, custom_task
from services.dhp.perturb import Item
from services.text import split_sentences

SUMMARY = (
    "The council met on Tuesday in Leeds. It approved 47 million pounds for the harbour bridge. "
    "Work starts in March and ends in 2027. The mayor, Ann Reid, welcomed the decision."
)
OTHER = "A storm hit the coast on Friday. Thousands of homes lost power. Crews worked overnight."
ITEMS = [Item("a", SUMMARY, "article a"), Item("b", OTHER, "article b"), Item("c", "Short one.", "article c")]


def apply(kind: str, k: int | None, item: Item = ITEMS[0], seed: int = 3, degree: str = "single"):
    return perturb.apply_rule(Perturbation(kind, degree, k), item, ITEMS, seed)  # type: ignore[arg-type]


def test_table_2_k_per_task():
    summ = {p.key: p.k for p in TASKS["summarization"].perturbations}
    assert summ["char_deletion:minor"] == 10 and summ["char_deletion:major"] == 50
    assert summ["typo:minor"] == 10 and summ["typo:major"] == 50
    assert summ["reorder:minor"] == 2 and summ["reorder:major"] == 0  # 0 = all sentences
    assert len(TASKS["summarization"].perturbations) == 12
    story = {p.key: p.k for p in TASKS["story"].perturbations}
    assert story == {
        "char_deletion": 5,
        "typo": 5,
        "fictional_entities": None,
        "grammar": None,
        "random_ending": None,
        "wrong_ending": None,
    }
    qa = {p.key: p.k for p in TASKS["qa"].perturbations}
    assert qa["char_deletion:minor"] == 5 and qa["char_deletion:major"] == 25 and "random_answer" in qa
    tr = {p.key: p.k for p in TASKS["translation"].perturbations}
    assert tr["word_deletion:minor"] == 5 and tr["word_deletion:major"] == 25 and tr["typo:major"] == 50
    assert [m.name for m in TASKS["translation"].metrics] == ["Accuracy", "Fluency"]


@pytest.mark.parametrize("k", [1, 10, 50])
def test_k_deletions_remove_k_alphanumeric_characters(k):
    out = apply("char_deletion", k)
    assert len(SUMMARY) - len(out.perturbed) == k
    removed = Counter(SUMMARY) - Counter(out.perturbed)
    assert sum(removed.values()) == k and all(c.isalnum() for c in removed)
    # What is left is the original in order (a subsequence): only deletions happened.
    it = iter(SUMMARY)
    assert all(c in it for c in out.perturbed)


def test_deleting_more_characters_than_there_are_deletes_them_all():
    out = perturb.apply_rule(Perturbation("char_deletion", k=500), Item("x", "ab c!"), ITEMS, 0)
    assert out.perturbed == " !"


@pytest.mark.parametrize("k", [1, 10, 50])
def test_typos_apply_k_changes_with_the_typo_package(k):
    out = apply("typo", k)
    assert out.perturbed != SUMMARY
    ops = out.detail.split(": ", 1)[1].split(", ")
    assert len(ops) == k and set(ops) <= set(perturb.TYPO_OPERATIONS)


def test_typos_leave_the_global_random_state_alone():
    import random

    random.seed(42)
    expected = random.random()
    random.seed(42)
    apply("typo", 10)
    assert random.random() == expected


@pytest.mark.parametrize("k", [2, 5])
def test_k_continuous_words_are_deleted(k):
    out = apply("word_deletion", k)
    words, left = SUMMARY.split(), out.perturbed.split()
    assert len(words) - len(left) == k
    # The remaining words are the original with one contiguous block of k words cut out.
    assert any(words[:i] + words[i + k :] == left for i in range(len(words) - k + 1))


def test_reordering_keeps_the_sentence_multiset_and_changes_the_order():
    for key, k in (("minor", 2), ("major", 0)):
        out = apply("reorder", k, degree=key)
        before, after = split_sentences(SUMMARY), split_sentences(out.perturbed)
        assert Counter(before) == Counter(after) and before != after
        if k == 2:  # exactly two sentences changed place
            assert sum(a != b for a, b in zip(before, after, strict=True)) == 2


def test_reordering_one_sentence_is_reported_not_faked():
    out = perturb.apply_rule(Perturbation("reorder", "minor", 2), ITEMS[2], ITEMS, 0)
    assert out.perturbed is None and "fewer than two" in out.error


def test_random_ending_and_answer_come_from_another_item_and_wrong_ending_from_the_item():
    for kind in ("random_ending", "random_answer"):
        out = apply(kind, None)
        assert out.perturbed in {OTHER, "Short one."} and out.perturbed != SUMMARY
    story = Item("s", "She smiled.", "A story.", {"wrong_ending": "She hated cake."})
    assert perturb.apply_rule(Perturbation("wrong_ending"), story, [story], 0).perturbed == "She hated cake."
    missing = perturb.apply_rule(Perturbation("wrong_ending"), ITEMS[0], ITEMS, 0)
    assert missing.perturbed is None and "wrong_ending" in missing.error
    alone = perturb.apply_rule(Perturbation("random_answer"), ITEMS[0], [ITEMS[0]], 0)
    assert alone.perturbed is None and alone.error


def test_same_seed_same_texts_other_seed_other_texts():
    task = TASKS["summarization"]
    a = perturb.perturb_all(task, ITEMS, seed=11)
    b = perturb.perturb_all(task, list(reversed(ITEMS)), seed=11)
    key = {(p.item_id, p.perturbation): p.perturbed for p in a}
    assert key == {(p.item_id, p.perturbation): p.perturbed for p in b}  # order of items does not matter
    c = perturb.perturb_all(task, ITEMS, seed=12)
    assert key != {(p.item_id, p.perturbation): p.perturbed for p in c}


def test_llm_perturbations_need_a_model_and_use_the_paper_prompt(client, fake):
    task = TASKS["summarization"]
    p = task.perturbation("fictional_entities:minor")
    assert perturb.perturb_item(task, p, ITEMS[0], ITEMS, seed=0).error == "LLM-based: needs a model"
    fake.enqueue_text("Revised Summary: " + SUMMARY.replace("Leeds", "Bramblecove"))
    out = perturb.perturb_item(task, p, ITEMS[0], ITEMS, seed=0, client=client)
    assert out.perturbed == SUMMARY.replace("Leeds", "Bramblecove") and out.error is None
    prompt = fake.requests[-1]["messages"][0]["content"]
    assert "substitute only one critical named entity within the summary" in prompt
    assert prompt.endswith("Revised Summary:") and SUMMARY in prompt
    # An unchanged text is no perturbation: the item says so.
    fake.enqueue_text(SUMMARY)
    same = perturb.perturb_item(task, task.perturbation("grammar:major"), ITEMS[0], ITEMS, seed=0, client=client)
    assert same.perturbed is None and "unchanged" in same.error
    assert "two or more grammatical errors" in fake.requests[-1]["messages"][0]["content"]
    # Asking for JSON is the labelled option.
    fake.enqueue_json({"revised_summary": SUMMARY.replace("Leeds", "Ormsby")})
    js = perturb.perturb_item(task, p, ITEMS[0], ITEMS, seed=0, client=client, answer_format="structured")
    assert js.perturbed == SUMMARY.replace("Leeds", "Ormsby") and "Reply with JSON" in last_prompt(fake)


def last_prompt(fake) -> str:
    return fake.requests[-1]["messages"][0]["content"]


def test_custom_tasks_are_checked():
    t = custom_task(
        "dialogue",
        "Dialogue",
        text_label="Reply",
        source_label="Context",
        metrics=[("Engagingness", "Is it engaging?")],
        perturbations=[{"kind": "typo", "k": 3}],
    )
    assert t.metric_names == ["Engagingness"] and t.perturbations[0].k == 3
    with pytest.raises(ValueError, match="built-in"):
        custom_task("qa", "x", text_label="a", source_label=None, metrics=[("m", "")], perturbations=[])
    with pytest.raises(ValueError, match="Unknown perturbation"):
        custom_task("zz", "x", text_label="a", source_label=None, metrics=[("m", "")], perturbations=[{"kind": "nope"}])


def test_the_sample_set_has_items_for_every_task_and_they_perturb():
    from pathlib import Path

    data = json.loads((Path(__file__).resolve().parents[2] / "samples" / "dhp.json").read_text())
    for key, task in TASKS.items():
        items = perturb.items_from_records(data[key]["items"])
        assert len(items) >= 3
        for p in task.perturbations:
            if p.spec.method == "rule":
                outs = [perturb.apply_rule(p, it, items, 0) for it in items]
                assert all(o.error is None for o in outs), (key, p.key, [o.error for o in outs])
