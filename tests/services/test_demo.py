"""The demo workspace: texts whose labels follow from how they were made, scripted raters that answer the app's
own prompts by their rules, and a workspace built through the services in a database of its own."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from db.engine import make_engine
from services import annotations, conseval, datasets, dhp, judges, reports, runs
from services.demo import raters, texts, workspace
from services.demo.build import OFFLINE, SMALL
from services.errors import InputError

NUMBER = re.compile(r"\d+")


def _faithful_sentences(row: texts.Row) -> set[str]:
    """Every summary sentence its paragraph's template gives, left as written."""
    slots = texts.reference(int(row.id.rsplit("-", 1)[1]), _rng_at(row)).slots
    t = next(i for i, (tpl, _) in enumerate(texts.TEMPLATES) if tpl.format(**slots) == row.reference)
    return {a.format(**slots) for a, _ in texts.TEMPLATES[t][1]}


def _rng_at(row: texts.Row):
    """The generator state `dataset_rows` had when it drew this row's paragraph (paragraphs are drawn in order)."""
    import random

    rng = random.Random(0)
    for i in range(int(row.id.rsplit("-", 1)[1])):
        texts.reference(i, rng)
    return rng


def test_a_summary_left_as_written_is_consistent_and_a_changed_one_is_wrong_in_the_sentence_named():
    rows = texts.dataset_rows(24)
    assert {r.system for r in rows} == set(texts.SYSTEMS)
    for row in rows:
        made = row.made
        faithful = _faithful_sentences(row)
        if made.label == 1:
            assert made.rule == "" and made.wrong is None
            assert set(made.sentences) <= faithful, row.id
            continue
        assert made.wrong in made.sentences and made.wrong not in faithful, row.id
        assert set(made.sentences) - {made.wrong} <= faithful, "one sentence changed, the others as written"
        if made.rule == "number":
            new = set(NUMBER.findall(made.wrong)) - set(NUMBER.findall(row.reference))
            assert new, f"{row.id}: a number the paragraph does not give"
        elif made.rule == "name":
            names = {f"{f} {last}" for f in texts.FIRST for last in texts.LAST}
            said = {n for n in names if n in made.wrong}
            assert said and not any(n in row.reference for n in said), row.id
        else:
            assert made.rule == "negation" and " not " in made.wrong and " not " not in row.reference


def test_the_three_systems_err_at_different_rates():
    rows = texts.dataset_rows(90)
    wrong = {s: sum(1 - r.made.label for r in rows if r.system == s) / 90 for s in texts.SYSTEMS}
    assert wrong["system-A"] < wrong["system-B"] < wrong["system-C"], wrong
    assert {r.made.rule for r in rows} == {"", "number", "name", "negation"}


def test_the_word_overlap_rule_notices_typos_and_not_reordering_and_the_length_rule_notices_neither():
    article = "The council met on Monday. It approved the new bridge. Work starts in May."
    summary = "The council met on Monday. It approved the new bridge."
    typos = "Teh cuoncil met on Mnoday. It aproved the nwe bridge."
    reordered = "It approved the new bridge. The council met on Monday."
    assert raters.overlap_score(summary, article) == 5
    assert raters.overlap_score(typos, article) < 5
    assert raters.overlap_score(reordered, article) == 5
    assert raters.length_score(summary) == raters.length_score(typos) == raters.length_score(reordered)


@pytest.mark.parametrize(
    ("options", "short", "long"),
    [("1-5", "5", "1"), ("1-10", "10", "1"), ("-5 to 5", "5", "-5"), ("No, Yes", "Yes", "No")],
)
def test_the_brevity_rule_answers_on_the_prompts_own_scale(options, short, long):
    def prompt(words: int) -> str:
        head = f"Options: {options}\n\nOnly output the evaluation score.\n\nQuery: q?\n\n"
        return f"{head}Response: {'w ' * words}\n\nAnswer:"

    assert raters.rate_conseval(prompt(5), 0) == short
    assert raters.rate_conseval(prompt(200), 0) == long
    assert raters.rate_conseval(prompt(200), -1) == long, "a step off the scale stays on it"


@pytest.fixture
def places(tmp_path, monkeypatch) -> tuple[Path, str]:
    """A data folder and the user's own database (a file with one run in it)."""
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    user = tmp_path / "user.db"
    url = f"sqlite:///{user}"
    monkeypatch.setenv("DATABASE_URL", url)
    eng = make_engine(url)
    try:
        runs.start_run(eng, OFFLINE, "The council met on Monday.", "The council met on Monday.",
                       _evidence())  # fmt: skip
    finally:
        eng.dispose()
    return user, url


def _evidence():
    from services.dcr import DCRConfig

    return DCRConfig(method="evidence", max_rounds=0)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_workspace_gives_every_page_its_data_in_a_file_of_its_own(places):
    user, user_url = places
    before = _digest(user)
    tour = workspace.ensure(size=SMALL)
    assert workspace.path().parent == Path(workspace.folder()) and workspace.path() != user
    assert _digest(user) == before, "the user's database is untouched"
    eng = make_engine(workspace.url())
    try:
        ds = datasets.get_dataset(eng, tour.dataset_id)
        assert ds.n_items == tour.n_items == 3 * SMALL.n_refs
        assert judges.systems.systems_of(eng, ds.id) == {s: SMALL.n_refs for s in texts.SYSTEMS}
        (batch,) = judges.data.batches(eng, [tour.evidence_batch_id])
        assert batch.status == "done" and batch.method == "evidence"
        assert judges.list_columns(eng, ds.id) == [tour.rouge_column]
        # labels: imported with the dataset, and from the labeller through the Annotate queue, each as made
        human = judges.human_frame(eng, ds.id)
        made = {r.id: r.made.label for r in texts.dataset_rows(SMALL.n_refs)}
        got = human.dropna(subset=["label"])
        assert set(got["source"]) == {"imported", "annotators"}
        assert len(got) == tour.n_labelled == 3 * (SMALL.imported_per_system + SMALL.annotated_per_system)
        assert all(int(lab) == made[x] for x, lab in zip(got["external_id"], got["label"], strict=True))
        queue = annotations.progress(eng, ds.id, tour.annotator_id)
        assert queue.assigned - queue.done == 3 * SMALL.queued_per_system, "items left for the visitor to label"
        # the judge card, the systems comparison and its share link, Label next
        cards = judges.build_cards(eng, [tour.evidence_batch_id, tour.rouge_column], dataset_id=ds.id)
        assert [c.n_labelled for c in cards] == [tour.n_labelled] * 2
        comparison, _ = judges.systems.compare_panel(eng, tour.comparison_id)
        assert len(comparison.systems) == 3 and comparison.n_pairs == 3
        share = reports.find_share(eng, tour.share_token)
        assert share is not None and reports.share_problem(share) is None
        assert reports.build(eng, share.kind, share.ref_id).headlines
        frames = [judges.judge_frame(eng, batch)]
        assert judges.propose(human, frames, k=2).item_ids
        # one evaluated document, a ConsEval study, a DHP benchmark with its discernment
        run = runs.load(eng, tour.run_id)
        assert run.run.status == "done" and run.rounds
        study = conseval.get_study(eng, tour.study_id)
        assert study.status == "done"
        assert len(dhp.runs(eng)) == 2 and {r.status for r in dhp.runs(eng)} == {"done"}
        for rid in tour.dhp_run_ids:
            assert dhp.discernment_of(eng, rid) is not None
    finally:
        eng.dispose()


def test_a_second_open_reads_the_built_workspace_and_a_deployment_can_turn_it_off(places, monkeypatch):
    first = workspace.ensure(size=SMALL)
    stamp = workspace.path().stat().st_mtime_ns
    assert workspace.ensure(size=SMALL) == first
    assert workspace.path().stat().st_mtime_ns == stamp, "not built again"
    assert not list(workspace.folder().glob(".*")), "nothing left of the build beside the workspace"
    monkeypatch.setenv("DEMO_WORKSPACE", "0")
    assert not workspace.enabled()
    with pytest.raises(InputError, match="turned off"):
        workspace.ensure(size=SMALL)


def test_jobs_started_in_the_demo_run_here_on_its_database_and_never_reach_the_workers(monkeypatch):
    import threading

    from services.jobs import queue
    from services.jobs import runner as jobrunner

    seen: list[tuple[object, int]] = []
    done = threading.Event()

    def process(engine, ident):
        seen.append((engine, ident))
        done.set()

    monkeypatch.setitem(jobrunner._kinds, "demo-probe", jobrunner.JobKind("demo-probe", process=process))
    monkeypatch.setattr(queue, "run_job", lambda *a: (_ for _ in ()).throw(AssertionError("sent to the workers")))
    demo_engine = object()
    queue.run_here(demo_engine)
    try:
        queue.submit("demo-probe", 7)
        assert done.wait(30)
    finally:
        queue.run_here(None)
    assert seen == [(demo_engine, 7)]
    with pytest.raises(AssertionError, match="sent to the workers"):
        queue.submit("demo-probe", 8)  # once the demo is left, jobs go to the workers again
