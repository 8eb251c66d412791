"""The Batches page: start a batch over a dataset, follow it, cancel, re-run failed items."""

from __future__ import annotations

from sqlmodel import Session

import services.database
from db.models import Dataset, DatasetItem, Document
from services.jobs import batches
from services.text import split_sentences
from tests.app.helpers import CAND, FIXED, REF, click, texts
from tests.support.waiting import HEALTHY_TIMEOUT

BATCHES = "pages/5_Batches.py"


def seed_dataset(n: int = 4) -> int:
    eng = services.database.get_engine()
    with Session(eng) as s:
        ref = Document(sha256="ref", text=REF, n_chars=len(REF))
        ds = Dataset(name="eiffel", format="jsonl", sha256="eiffel", n_items=n)
        s.add(ref)
        s.add(ds)
        s.flush()
        for i in range(n):
            cand = f"Item {i}. " + (CAND if i % 2 == 0 else FIXED)  # distinct prompts: no cache hit between items
            s.add(
                DatasetItem(
                    dataset_id=ds.id,
                    idx=i,
                    external_id=str(i),
                    reference_id=ref.id,
                    candidate=cand,
                    sentences=split_sentences(cand),
                    human_label=int(i % 2),
                )
            )
        s.commit()
        return ds.id


def test_without_datasets_the_page_points_to_the_datasets_page(open_page):
    at = open_page(BATCHES)
    assert not at.exception
    assert any("Import a dataset first" in t for t in texts(at.info))


def test_starting_a_batch_runs_it_and_shows_progress_and_items(open_page, judge):
    seed_dataset(4)
    at = open_page(BATCHES)
    assert not at.exception
    at = at.button(key="ba_start").click().run()  # tasks run inline in tests
    assert not at.exception, at.exception
    assert at.query_params["batch"] == ["1"] or at.query_params["batch"] == "1"
    p = batches.progress(services.database.get_engine(), 1)
    assert p is not None and p.done == 4 and p.batch.status == "done"
    assert len(judge.requests) == 4
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Done"] == "4" and metrics["Failed"] == "0" and metrics["Answered"] == "4"
    assert metrics["Retries"] == "0"
    assert any("Batch #1" in m for m in texts(at.markdown))


def test_a_deep_link_opens_a_batch_and_a_missing_one_is_explained(open_page, judge):
    seed_dataset(2)
    eng = services.database.get_engine()
    from services.config import BackendConfig
    from services.dcr import DCRConfig

    backend = BackendConfig(kind="openai", base_url=judge.base_url, model="fake-model", max_retries=0)
    bid = batches.create_batch(eng, dataset_id=1, backend=backend, cfg=DCRConfig(max_rounds=0))
    at = open_page(BATCHES, query={"batch": str(bid)})
    assert not at.exception
    assert any(f"Batch #{bid}" in m for m in texts(at.markdown))
    assert {m.label: m.value for m in at.metric}["Pending"] == "2"
    assert any(b.label == "Cancel" for b in at.button)
    at = click(at, "Cancel")
    assert not at.exception
    assert batches.progress(eng, bid).batch.status == "cancelled"

    at = open_page(BATCHES, query={"batch": "999"})
    assert not at.exception
    assert any("no longer exists" in w for w in texts(at.warning))


def test_a_sent_nli_batch_with_a_window_and_repeats(open_page, judge):
    from tests.nli_fakes import nli_judge

    judge.responder = nli_judge()
    seed_dataset(2)
    at = open_page(BATCHES)
    at.selectbox(key="ba_method").set_value("sent-nli")
    at.number_input(key="ba_window").set_value(2)
    at.number_input(key="ba_repeats").set_value(2)
    at = at.button(key="ba_start").click().run()
    assert not at.exception, at.exception
    eng = services.database.get_engine()
    table = at.dataframe[0].value.set_index("batch")
    assert list(table.loc[[1, 2], "method"]) == ["sent-nli", "sent-nli"]
    assert list(table.loc[[1, 2], "window"]) == [2, 2] and list(table.loc[[1, 2], "repeat"]) == [1, 2]
    assert [batches.options(eng, b).sample for b in (1, 2)] == [0, 1]
    assert all(batches.progress(eng, b).done == 2 for b in (1, 2))
    # each item has 4 sentences ("Item i." + 3) in 2 windows; the repeat asks the model again
    assert len([r for r in judge.requests if "specified sentence" in r["messages"][0]["content"]]) == 8
    assert any("window 2" in c for c in texts(at.caption))


def _start_panel_open(at) -> bool:
    (panel,) = [e for e in at.expander if e.label == "Start a batch"]
    return panel.proto.expanded


def test_the_start_panel_stays_as_it_opened_when_batches_appear(open_page, judge):
    seed_dataset(2)
    at = open_page(BATCHES)
    assert _start_panel_open(at)  # no batch yet: open
    at = at.button(key="ba_start").click().run()
    assert not at.exception, at.exception
    assert batches.list_batches(services.database.get_engine())
    at.run()  # the rerun the page makes when the batch changes state must not close the form
    assert _start_panel_open(at)
    assert not _start_panel_open(open_page(BATCHES))  # a new session with batches there: closed


def test_alpha_and_beta_set_on_the_page_are_the_batch_items_eq3(open_page, judge):
    seed_dataset(2)
    at = open_page(BATCHES)
    at.number_input(key="ba_alpha").set_value(1.0)
    at.number_input(key="ba_beta").set_value(1.0)
    at = at.button(key="ba_start").click().run()
    assert not at.exception, at.exception
    eng = services.database.get_engine()
    (b,) = batches.list_batches(eng)
    assert batches.eq3_of(b.params) == {"alpha": 1.0, "beta": 1.0}
    with Session(eng) as s:
        from db.models import BatchItem

        rows = s.query(BatchItem).filter(BatchItem.batch_id == b.id).all()
    first_rounds = [r.result["rounds"][0] for r in rows]
    assert all(r["alpha"] == 1.0 and r["beta"] == 1.0 for r in first_rounds), first_rounds
    # Eq. 3 with alpha = beta = 1: Z = (sum z + 1) / (k + 1), never the plain mean of the marks
    for r in first_rounds:
        marks = [x["mark"] for x in r["sentences"] if x["mark"] is not None]
        if r["score"] is not None:
            assert r["score"] == ((sum(marks) + 1) / (len(marks) + 1) + 1) / 2


def test_the_start_form_names_the_model_and_estimates_before_the_run(open_page, judge):
    seed_dataset(4)
    at = open_page(BATCHES)
    assert not at.exception
    captions = texts(at.caption)
    assert any(c.startswith("Model: `fake-model` at `http://127.0.0.1:") for c in captions), captions
    est = [c for c in captions if c.startswith("Estimate:")]
    assert est and "**4 calls**" in est[0] and "input + " in est[0] and "output tokens" in est[0], est
    assert "no price per million tokens" in est[0], "no price set: no cost guessed"


def test_empty_batch_cells_read_as_a_dash_not_none(open_page, judge):
    seed_dataset(2)
    at = open_page(BATCHES)
    at = at.button(key="ba_start").click().run()
    table = next(d for d in at.dataframe if "window" in d.value.columns)
    assert table.proto.placeholder == "—"
    assert str(table.value["window"].dtype) == "Int64", "whole numbers with blanks, not floats or 'None'"


def test_items_where_the_judge_and_the_evidence_disagree_can_be_shown_alone(open_page, fake):
    """The judge calls every sentence consistent; the evidence finds "1999" (and each "Item N." label) nowhere in
    the article: the sentences with 1999 are flagged in the items with CAND, none in those with FIXED."""
    from services.config import BackendConfig
    from services.dcr import DCRConfig
    from tests.fakes import toy_judge

    fake.responder = toy_judge(bad="no such text", fix="")
    eng = services.database.get_engine()
    ds = seed_dataset(4)
    backend = BackendConfig(
        kind="openai", base_url=fake.base_url, model="fake-model", max_retries=0, timeout=HEALTHY_TIMEOUT
    )
    bid = batches.create_batch(eng, dataset_id=ds, backend=backend, cfg=DCRConfig(max_rounds=0))
    batches.process_batch(eng, bid)
    at = open_page(BATCHES, query={"batch": str(bid)})
    assert not at.exception, at.exception
    at = at.toggle(key=f"ba_flagged_{bid}").set_value(True).run()
    assert not at.exception, at.exception
    assert any("6 sentence(s) in 4 of 4 finished item(s) flagged" in c for c in texts(at.caption)), texts(at.caption)
    flagged, shown = at.dataframe[-2].value, at.dataframe[-1].value
    assert set(flagged["item"]) == set(shown["item"])
    with_1999 = flagged[flagged["text"].str.contains("1999")]
    assert sorted(with_1999["external_id"]) == ["0", "2"] and set(flagged["judge"]) == {"consistent"}
    assert all("does not appear in the article" in w for w in with_1999["why"])


def test_the_long_choices_of_the_form_get_room_to_be_read(open_page):
    """Task and evaluator share a row in halves, the converter (the longest labels) has a row of its own."""
    seed_dataset()
    at = open_page(BATCHES)
    assert not at.exception, at.exception
    in_columns = [sb.label for col in at.columns for sb in col.selectbox]
    assert "Converter" not in in_columns and {"Task", "Evaluator"} <= set(in_columns)
    holding = [col for col in at.columns if [sb.label for sb in col.selectbox] in (["Task"], ["Evaluator"])]
    assert [col.weight for col in holding] == [0.5, 0.5]


def test_an_evidence_batch_names_no_converter_and_no_rounds(open_page):
    """The evidence checker uses neither: the batch's line does not list them."""
    from services.config import BackendConfig
    from services.dcr import DCRConfig

    seed_dataset(2)
    eng = services.database.get_engine()
    bid = batches.create_batch(eng, dataset_id=1, backend=BackendConfig(), cfg=DCRConfig(method="evidence"))
    at = open_page(BATCHES, query={"batch": str(bid)})
    assert not at.exception, at.exception
    (line,) = [c for c in texts(at.caption) if "concurrency" in c and "status" in c]
    assert "Evidence checker" in line and "converter" not in line and "rounds" not in line


def _finish(bid: int, failed: int) -> None:
    """Mark a batch done, its first `failed` items failed and the rest done (as the worker leaves them)."""
    from sqlmodel import select

    from db.models import Batch, BatchItem

    with Session(services.database.get_engine()) as s:
        items = s.exec(select(BatchItem).where(BatchItem.batch_id == bid).order_by(BatchItem.id)).all()
        for i, it in enumerate(items):
            it.status = "failed" if i < failed else "done"
            it.error = "Cannot reach the server" if i < failed else None
            s.add(it)
        b = s.get(Batch, bid)
        b.status = "done"
        s.add(b)
        s.commit()


def test_a_batch_that_ended_with_failures_says_so_and_counts_them_apart(open_page, judge):
    from services.config import BackendConfig
    from services.dcr import DCRConfig

    seed_dataset(4)
    eng = services.database.get_engine()
    bid = batches.create_batch(eng, dataset_id=1, backend=BackendConfig(), cfg=DCRConfig(method="evidence"))
    _finish(bid, failed=3)
    at = open_page(BATCHES, query={"batch": str(bid)})
    assert not at.exception, at.exception
    (line,) = [c for c in texts(at.caption) if "concurrency" in c and "status" in c]
    assert "status **finished with 3 failures**" in line, line
    assert "1 done · 3 failed · 0 pending, of 4 items" in texts(at.caption)
    (table,) = [d.value for d in at.dataframe if "status" in d.value.columns and "batch" in d.value.columns]
    assert table.loc[table["batch"] == bid, "status"].item() == "finished with 3 failures"
    assert batches.status_text("done", 0) == "done" and batches.status_text("done", 1) == "finished with 1 failure"


def test_the_estimate_follows_a_change_of_evaluator_at_once(open_page, judge):
    seed_dataset(4)
    at = open_page(BATCHES)
    (before,) = [c for c in texts(at.caption) if c.startswith("Estimate:")]
    assert "**4 calls**" in before
    at.selectbox(key="ba_method").set_value("evidence").run()  # the offline checker: no model call
    assert not at.exception, at.exception
    (after,) = [c for c in texts(at.caption) if c.startswith("Estimate:")]
    assert "no model call" in after, after


def test_the_item_tables_read_one_page_from_the_database(open_page, monkeypatch):
    """A 50,000-item batch is never loaded whole: the Items and Failed items tables read a page of rows (in dataset
    order) from the database, and the page picker reaches the last one."""
    from db import batches as db_batches
    from tests.metaeval_seed import Item, seed

    C, X = "consistent", "inconsistent"
    items = [Item([[C, X if i % 3 else C]], human_score=0.5, human_label=i % 2) for i in range(230)]
    items += [Item([[C]], status="failed") for _ in range(3)]
    _, bid = seed(services.database.get_engine(), items)
    loaded: list[int] = []
    real = db_batches.item_table

    def counting(**kw):
        rows = real(**kw)
        loaded.append(len(rows))
        return rows

    monkeypatch.setattr(db_batches, "item_table", counting)
    at = open_page(BATCHES, query={"batch": str(bid)})
    assert not at.exception, at.exception
    assert loaded and max(loaded) <= 100, loaded

    def item_table():
        return [d.value for d in at.dataframe if "final score" in d.value.columns][-1]

    first = item_table()
    assert len(first) == 100 and list(first["external_id"][:2]) == ["x0", "x1"]
    assert any("Rows 1–100 of 233" in c for c in texts(at.caption)), texts(at.caption)
    at.number_input(key=f"ba_items_page_{bid}_0").set_value(3).run()
    assert not at.exception, at.exception
    last = item_table()
    assert list(last["external_id"]) == [f"x{i}" for i in range(200, 233)]
    assert max(loaded) <= 100, loaded
    failed = [d.value for d in at.dataframe if list(d.value.columns) == ["item", "external_id", "error"]]
    assert [list(f["external_id"]) for f in failed] == [["x230", "x231", "x232"]]


def test_the_estimate_reads_a_datasets_sizes_once_not_at_every_render(open_page, judge, monkeypatch):
    """The start form's estimate needs every item's text sizes; a dataset never changes once imported, so they
    are read at the first render and kept (an item limit is its own read)."""
    from services import estimates

    seed_dataset(4)
    calls: list[int | None] = []
    real = estimates.dataset_sizes

    def counting(engine, dataset_id, *, limit=None):
        calls.append(limit)
        return real(engine, dataset_id, limit=limit)

    monkeypatch.setattr(estimates, "dataset_sizes", counting)
    at = open_page(BATCHES)
    at.number_input(key="ba_repeats").set_value(2).run()
    assert not at.exception, at.exception
    (est,) = [c for c in texts(at.caption) if c.startswith("Estimate:")]
    assert "**8 calls**" in est, est  # the sizes kept, the repeats applied to them
    assert calls == [None], calls
    (limit,) = [n for n in at.number_input if n.label == "Item limit"]
    limit.set_value(2).run()
    assert "**4 calls**" in next(c for c in texts(at.caption) if c.startswith("Estimate:"))
    assert calls == [None, 2], calls


def test_deleting_a_running_batch_says_its_workers_stop_first_and_shows_it_deleting(open_page, judge, monkeypatch):
    from services.config import BackendConfig
    from services.dcr import DCRConfig
    from services.jobs.batches import work

    monkeypatch.setattr(work, "DELETE_WAIT_SECONDS", 0.0)  # the worker below never lets go
    seed_dataset(4)
    eng = services.database.get_engine()
    backend = BackendConfig(kind="openai", base_url=judge.base_url, model="fake-model", max_retries=0)
    bid = batches.create_batch(eng, dataset_id=1, backend=backend, cfg=DCRConfig(max_rounds=0))
    batches.heartbeat(eng, "elsewhere:1")
    batches.claim(eng, bid, "elsewhere:1", 2)  # a live worker on another machine is on it
    with Session(eng) as s:
        from db.models import Batch

        s.get(Batch, bid).status = "running"
        s.commit()
    at = open_page(BATCHES, query={"batch": str(bid)})
    at = click(at, "Delete this batch")
    assert any("Its workers stop first: nothing more is sent" in w for w in texts(at.warning))
    at = at.button(key="ba_do_delete").click().run()
    assert not at.exception, at.exception
    assert batches.progress(eng, bid).batch.status == "deleting"
    assert any("Deleting: its workers are stopping" in i for i in texts(at.info))
    assert not any(b.label == "Delete this batch" for b in at.button)
    batches.release_own(eng, bid, "elsewhere:1")  # the worker lets go; housekeeping finishes the delete
    batches.recover(eng)
    assert batches.progress(eng, bid) is None
