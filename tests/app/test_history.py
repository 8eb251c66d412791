"""History page: the empty state, the table of runs, filtering, opening and comparing runs."""

from __future__ import annotations

import services.database
from services import runs
from services.config import BackendConfig
from tests.app.helpers import HISTORY, click, counts, seed_run, texts
from tests.support.waiting import HEALTHY_TIMEOUT


def test_no_runs_shows_the_hint(open_page):
    at = open_page(HISTORY)
    assert not at.exception
    assert any("No runs yet" in i for i in texts(at.info)), texts(at.info)
    assert not at.dataframe


def test_runs_are_listed_in_the_table(open_page, judge):
    seed_run(judge)
    seed_run(judge, candidate="The tower is made of wrought iron.", source="cli")
    at = open_page(HISTORY)
    assert not at.exception
    assert not at.info
    df = at.dataframe[0].value
    assert sorted(df["run"].tolist()) == [1, 2]
    row = df.set_index("run").loc[1]
    assert row["candidate"].startswith("The Eiffel Tower is in Paris.")
    assert (row["task"], row["method"], row["model"], row["status"], row["source"]) == (
        "summarization",
        "DCE-AMC",
        "fake-model",
        "done",
        "app",
    )
    assert abs(row["initial Ẑ"] - 2 / 3) < 1e-9
    assert df.set_index("run").loc[2, "source"] == "cli"


def test_filter_narrows_the_table(open_page, judge):
    seed_run(judge)
    seed_run(judge, candidate="The tower is made of wrought iron.", source="cli")
    at = open_page(HISTORY)
    at = at.text_input[0].input("the TOWER is made").run()
    assert not at.exception
    assert at.dataframe[0].value["run"].tolist() == [2]
    at = at.text_input[0].input("no run says this").run()
    assert not at.exception
    assert at.dataframe[0].value.empty


def select_rows(at, *rows: int):
    """What the browser sends when rows of the table are ticked."""
    at.session_state["hi_table"] = {"selection": {"rows": list(rows), "columns": [], "cells": []}}
    return at.run()


def test_selecting_a_run_shows_its_details_and_reopens_it(open_page, judge):
    seed_run(judge)
    at = select_rows(open_page(HISTORY), 0)
    assert not at.exception
    assert "#### Run #1" in texts(at.markdown)
    assert any("cs-inconsistent" in t and "It was completed in 1999." in t for t in texts(at.markdown))
    assert "Round 0: Ẑ = 0.667" in [e.label for e in at.expander]
    # Each sentence's evidence: its number found nowhere in the article, and the closest article sentence.
    cards = next(t for t in texts(at.markdown) if "cs-card" in t)
    assert 'cs-novel-number" title="number or date not in the reference">1999</mark>' in cards
    assert "article #2" in cards

    at = click(at, "Reopen in Evaluate")
    assert not at.exception
    assert at.query_params["run"] == "1"
    assert [s.value for s in at.subheader] == ["Run #1 · Summarization"]


def test_two_selected_runs_are_compared(open_page, judge):
    seed_run(judge)
    seed_run(judge, candidate="The tower is made of wrought iron.")
    at = select_rows(open_page(HISTORY), 0, 1)
    assert not at.exception
    assert any(s.startswith("Compare run #") for s in texts(at.subheader))
    diff = at.dataframe[1].value
    assert set(diff["setting"]) >= {"candidate", "initial Ẑ"}
    assert "initial_score" not in set(diff["setting"]) and not diff.isna().any().any()
    assert {"#### Run #1", "#### Run #2"} <= set(texts(at.markdown))


def test_delete_asks_first_then_removes_the_run(open_page, judge):
    seed_run(judge)
    seed_run(judge, candidate="The tower is made of wrought iron.")
    at = select_rows(open_page(HISTORY), 0)
    run_id = int(at.dataframe[0].value.iloc[0]["run"])
    at = click(at, "Delete 1 run(s)")
    assert any(f"Delete run(s) {run_id}" in w for w in texts(at.warning))
    assert counts()["runs"] == 2, "nothing is deleted before the confirmation"
    at = click(at, "Delete")
    assert not at.exception
    assert counts()["runs"] == 1
    assert runs.load(services.database.get_engine(), run_id) is None
    # The run that moved up into the deleted row's place was never chosen: nothing is selected, nothing offered.
    assert "run" not in at.query_params
    assert at.session_state["hi_table"]["selection"]["rows"] == []
    assert not any(b.label.startswith("Delete") for b in at.button)
    assert not any(t.startswith("#### Run #") for t in texts(at.markdown))


def test_selecting_runs_puts_them_in_the_url(open_page, judge):
    seed_run(judge)
    seed_run(judge, candidate="The tower is made of wrought iron.")
    at = select_rows(open_page(HISTORY), 0)
    assert at.query_params["run"] == "2", "the newest run is the first row"
    at = select_rows(at, 0, 1)
    assert at.query_params["run"] == "2,1"
    at = select_rows(at)
    assert "run" not in at.query_params


def test_a_link_to_a_run_selects_it(open_page, judge):
    seed_run(judge)
    seed_run(judge, candidate="The tower is made of wrought iron.")
    at = open_page(HISTORY, query={"run": "1"})
    assert not at.exception
    assert at.session_state["hi_table"]["selection"]["rows"] == [1], "run 1 is the second row"
    assert "#### Run #1" in texts(at.markdown)
    assert any(b.label == "Reopen in Evaluate" for b in at.button)


def test_a_filter_keeps_the_same_runs_selected(open_page, judge):
    seed_run(judge)
    seed_run(judge, candidate="The tower is made of wrought iron.")
    at = select_rows(open_page(HISTORY), 1)  # run 1
    at = at.text_input[0].input("Eiffel Tower is in Paris").run()
    assert not at.exception
    assert at.dataframe[0].value["run"].tolist() == [1]
    assert at.session_state["hi_table"]["selection"]["rows"] == [0], "run 1, now the only row"
    assert at.query_params["run"] == "1"
    assert "#### Run #1" in texts(at.markdown) and "#### Run #2" not in texts(at.markdown)


def test_a_link_to_a_missing_run_says_so(open_page, judge):
    seed_run(judge)
    at = open_page(HISTORY, query={"run": "99"})
    assert not at.exception
    assert any("There is no run #99" in w for w in texts(at.warning)), texts(at.warning)
    assert "run" not in at.query_params


def test_nli_runs_are_listed_with_their_method_and_window_and_reopen_with_their_windows(open_page, judge):
    from services.config import BackendConfig
    from tests.nli_fakes import nli_judge

    judge.responder = nli_judge()
    backend = BackendConfig(
        kind="openai", base_url=judge.base_url, model="fake-model", max_retries=1, timeout=HEALTHY_TIMEOUT
    )
    from tests.app.helpers import CAND, REF

    group = runs.compare_methods(services.database.get_engine(), backend, REF, CAND, ["summ-nli", "sent-nli"], window=2)
    at = open_page(HISTORY)
    assert not at.exception
    df = at.dataframe[0].value.set_index("run")
    assert df.loc[1, "method"] == "Summ-NLI" and df.loc[2, "method"] == "Sent-NLI"
    assert df.loc[2, "window"] == 2 and df.loc[2, "converter"] == "—"
    at = select_rows(at, 0)  # the newest run first: Sent-NLI, w = 2
    assert not at.exception
    windows = next(d.value for d in at.dataframe[1:] if "judgement" in d.value.columns)
    assert list(windows["judgement"]) == ["✗ inconsistent", "✓ consistent"]
    assert group


def test_at_1280_px_the_method_and_scores_come_before_the_wide_columns(open_page, judge):
    """The method column and "Reopen in Evaluate" were cut off at 1280 × 800."""
    seed_run(judge)
    at = open_page(HISTORY, query={"run": "1"})
    assert not at.exception
    cols = list(at.dataframe[0].value.columns)
    assert cols[:6] == ["run", "method", "status", "initial Ẑ", "final Ẑ", "rounds"], cols
    assert any(b.label == "Reopen in Evaluate" for b in at.button)
    # The actions sit in a horizontal container (each button as wide as its label), not in narrow columns.
    assert not [c for c in at.columns if any(getattr(b, "label", "") == "Reopen in Evaluate" for b in c.button)]


def test_history_flags_judge_and_evidence_disagreements_and_filters_to_them(open_page, fake):
    from tests.fakes import toy_judge

    fake.responder = toy_judge(bad="no such text", fix="")
    run_id = seed_run(fake)
    at = open_page(HISTORY, query={"run": str(run_id)})
    assert not at.exception, at.exception
    toggle = next(t for t in at.toggle if t.label.startswith("Only the 1 sentence(s) where the judge"))
    at = toggle.set_value(True).run()
    assert not at.exception, at.exception
    cards = [m for m in texts(at.markdown) if "cs-card" in m]
    assert cards and cards[0].count('class="cs-card') == 1 and "Judge and evidence disagree" in cards[0]


def test_history_shows_the_delivered_text_and_the_rejected_rewrite(open_page, judge):
    eng = services.database.get_engine()
    run_id = seed_run(judge)
    backend = BackendConfig(kind="openai", base_url=judge.base_url, model="fake-model", timeout=HEALTHY_TIMEOUT)
    runs.improve_run(eng, backend, run_id)
    assert runs.set_rewrite(eng, run_id, 0, 1, False)
    at = open_page(HISTORY, query={"run": str(run_id)})
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Score Ẑ of the delivered text"] == "0.667"
    assert "Score Ẑ" not in metrics  # the last round's 1.000 is not headlined: its text was not delivered
    assert any("Rejected by the reviewer" in c for c in texts(at.caption))
    assert any("1999" in c.value for c in at.code)


def test_the_table_reads_only_the_newest_runs(open_page, monkeypatch):
    """The table is one bounded query, newest first: with more runs than its limit, only the newest are read and
    the page says where the older ones are."""
    from db import runs as db_runs
    from services.dcr import DCRConfig
    from tests.app.helpers import CAND, REF

    eng = services.database.get_engine()
    ids = [runs.start_run(eng, BackendConfig(), REF, CAND, DCRConfig(method="evidence")) for _ in range(3)]
    asked: list[tuple[int, int]] = []
    real = db_runs.list_runs

    def capped(*, session, limit):
        rows = real(session=session, limit=min(limit, 2))
        asked.append((limit, len(rows)))
        return rows

    monkeypatch.setattr(db_runs, "list_runs", capped)
    monkeypatch.setattr(runs, "HISTORY_LIMIT", 2)
    at = open_page(HISTORY)
    assert not at.exception, at.exception
    assert asked and all(n <= 2 for _, n in asked), asked
    assert at.dataframe[0].value["run"].tolist() == ids[:0:-1]  # the two newest, newest first
    assert any("Showing the newest 2 runs" in c for c in texts(at.caption)), texts(at.caption)
