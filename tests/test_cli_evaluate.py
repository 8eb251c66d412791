"""`cli.py evaluate` with DCE-AMC: the batch engine underneath, its lines, resume, failures and --evidence."""

from __future__ import annotations

import json

import pytest

import cli
from services import headless
from services.config import BackendConfig
from services.database import get_engine
from services.dcr import DCRConfig, evidence
from services.jobs import batches
from tests.app.helpers import CAND, FIXED, REF
from tests.fakes import last_user, toy_judge

OTHER = "The Eiffel Tower is made of wrought iron."


@pytest.fixture
def env(fake, monkeypatch, tmp_path):
    fake.responder = toy_judge("1999", "1889")
    monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    return fake


def write_pairs(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def pairs(tmp_path):
    return write_pairs(
        tmp_path / "pairs.jsonl",
        [{"id": "x", "reference": REF, "candidate": CAND}, {"id": "y", "reference": REF, "candidate": OTHER}],
    )


def read_lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_lines_keep_round_0_every_round_and_usage_in_input_order(env, pairs, tmp_path) -> None:
    out = tmp_path / "out.jsonl"
    assert cli.main(["evaluate", "--input", pairs, "--output", str(out), "--rounds", "1"]) == 0
    x, y = read_lines(out)
    assert (x["id"], y["id"]) == ("x", "y") and x["batch"] == y["batch"]
    assert [s["verdict"] for s in x["sentences"]] == ["consistent", "inconsistent", "consistent"]
    assert x["score"] == pytest.approx(2 / 3) and x["k"] == 3 and y["score"] == pytest.approx(1.0)
    assert x["sentences"] == x["rounds"][0]["sentences"]
    assert [r["round"] for r in x["rounds"]] == [0, 1] and x["final_candidate"] == FIXED
    assert x["rounds"][1]["score"] == pytest.approx(1.0)
    rewritten = [w["after"] for r in x["rounds"] for w in r["rewrites"] if w["before"] != w["after"]]
    assert rewritten == ["It was completed in 1889."]
    assert x["usage"]["calls"] == 3 and x["error"] is None  # round 0, the rewrite, round 1
    assert all("evidence" not in s for line in (x, y) for r in line["rounds"] for s in r["sentences"])
    assert batches.progress(get_engine(), x["batch"]).done == 2


def test_evidence_is_computed_once_per_distinct_sentence_of_a_document(env, pairs, tmp_path, monkeypatch) -> None:
    seen: list[list[str]] = []
    real = evidence.analyse_many

    def counting(doc_pairs, **kw):
        seen.extend(list(sents) for _, sents in doc_pairs)
        return real(doc_pairs, **kw)

    monkeypatch.setattr(evidence, "analyse_many", counting)
    monkeypatch.setattr(evidence, "default_embedder", lambda: evidence.lexical_only)
    out = tmp_path / "out.jsonl"
    assert cli.main(["evaluate", "--input", pairs, "--output", str(out), "--rounds", "1", "--evidence"]) == 0
    x, y = read_lines(out)
    # Round 1 keeps two of x's sentences: they are analysed once, with the rewritten one beside them.
    assert sorted(map(sorted, seen)) == sorted(
        [sorted([*CAND.replace(". ", ".\n").split("\n"), "It was completed in 1889."]), [OTHER]]
    )
    wrong = x["sentences"][1]["evidence"]
    assert [s["text"] for s in wrong["novel"]] == ["1999"]
    assert x["rounds"][1]["sentences"][1]["evidence"]["novel"] == []
    assert y["sentences"][0]["evidence"]["top"][0]["ref_text"] == "The tower is made of wrought iron."


def test_an_item_the_model_fails_on_is_reported_and_the_rest_are_written(env, pairs, tmp_path, capsys) -> None:
    judge = toy_judge("1999", "1889")

    def respond(body: dict):
        prompt = last_user(body)
        return "not json at all" if "1999" in prompt or "\nSummary\n" not in prompt else judge(body)

    env.responder = respond
    out = tmp_path / "out.jsonl"
    assert cli.main(["evaluate", "--input", pairs, "--output", str(out)]) == 0
    x, y = read_lines(out)
    assert x["error"] and x["score"] is None and y["error"] is None
    err = capsys.readouterr().err
    assert f"x: {x['error']}" in err and "1 with errors" in err


def test_every_item_failing_exits_1(env, pairs, tmp_path) -> None:
    env.responder = lambda body: "not json at all"
    assert cli.main(["evaluate", "--input", pairs, "--output", str(tmp_path / "o.jsonl")]) == 1


def test_an_interrupted_run_is_resumed_by_the_same_command(env, pairs, tmp_path, capsys) -> None:
    backend = BackendConfig(kind="openai", base_url=env.base_url, model="fake-model", max_retries=0)
    engine = get_engine()
    first = headless.prepare(engine, path=tmp_path / "pairs.jsonl", backend=backend, cfg=DCRConfig(max_rounds=0))
    batches.claim(engine, first.batch_id, "gone:1", 1)  # a run killed with one item in flight
    batches.request_cancel(engine, first.batch_id)
    out = tmp_path / "out.jsonl"
    assert cli.main(["evaluate", "--input", pairs, "--output", str(out)]) == 0
    assert f"batch {first.batch_id} resumed" in capsys.readouterr().err
    assert [(line["batch"], line["error"]) for line in read_lines(out)] == [(first.batch_id, None)] * 2
    # Finished, the same command starts a new batch; its answers come from the cache.
    assert cli.main(["evaluate", "--input", pairs, "--output", str(out)]) == 0
    again = read_lines(out)
    assert again[0]["batch"] != first.batch_id and again[0]["usage"]["cache_hits"] == 1


def test_unreadable_rows_get_a_line_with_their_row_and_reason(env, tmp_path, capsys) -> None:
    path = write_pairs(
        tmp_path / "p.jsonl", [{"id": "x", "reference": REF, "candidate": OTHER}, {"id": "z", "reference": REF}]
    )
    out = tmp_path / "out.jsonl"
    assert cli.main(["evaluate", "--input", path, "--output", str(out)]) == 0
    x, z = read_lines(out)
    assert x["error"] is None and z == {"id": "2", "batch": x["batch"], "error": "row 2: missing field 'candidate'"}
    assert "2 lines, 1 with errors" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("none.jsonl", None, "no such file"),
        ("p.csv", "id,text\n1,hello\n", "not in the header"),
        ("p.jsonl", '{"id": 1, "text": "hello"}\n', "missing field 'reference'"),
    ],
)
def test_a_file_that_cannot_be_used_exits_2_with_the_reason(env, tmp_path, capsys, name, content, message) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert cli.main(["evaluate", "--input", str(path), "--output", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_the_pool_fits_the_concurrency(env, pairs, tmp_path) -> None:
    assert cli.main(["evaluate", "--input", pairs, "--output", str(tmp_path / "o.jsonl"), "--concurrency", "48"]) == 0
    assert get_engine().pool.size() >= 48


def test_the_embedded_model_is_not_started_for_a_document_longer_than_it_reads(tmp_path, monkeypatch, capsys) -> None:
    import services.embedded

    def refuse():
        raise AssertionError("the embedded model was started")

    monkeypatch.setattr(services.embedded, "get_embedded_server", refuse)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    long_reference = " ".join(f"Sentence {i} of a very long article about the tower." for i in range(4000))
    path = write_pairs(tmp_path / "long.jsonl", [{"id": "long", "reference": long_reference, "candidate": OTHER}])
    out = tmp_path / "out.jsonl"
    assert cli.main(["evaluate", "--input", path, "--output", str(out)]) == 1
    (line,) = read_lines(out)
    assert "more than the embedded model's" in line["error"] and line["usage"]["calls"] == 0


def test_a_labelled_file_keeps_its_labels_for_the_report(env, tmp_path, capsys) -> None:
    """A row's "label" is the dataset's human label (as `batch` and `card` keep it): `cli.py report` on the
    batch compares with them instead of saying that no item has both a score and a label."""
    rows = [
        {"id": "x", "reference": REF, "candidate": CAND, "label": 0},
        {"id": "y", "reference": REF, "candidate": OTHER, "label": "consistent"},
        {"id": "z", "reference": REF, "candidate": OTHER},
    ]
    path, out = write_pairs(tmp_path / "labelled.jsonl", rows), tmp_path / "out.jsonl"
    assert cli.main(["evaluate", "--input", path, "--output", str(out), "--method", "evidence"]) == 0
    assert "2 label(s) kept" in capsys.readouterr().err
    bid = read_lines(out)[0]["batch"]
    report = tmp_path / "report.json"
    assert cli.main(["report", "--run", str(bid), "--output", str(report), "--boot", "0"]) == 0
    rep = json.loads(report.read_text(encoding="utf-8"))
    assert rep["binary"]["score"]["n"] == 2 and rep["summary_level"]["classification"]["n"] == 2
    assert "No item has both a score and a label" not in json.dumps(rep)


def test_a_labelled_csv_keeps_its_labels_and_one_without_the_column_imports_as_before(env, tmp_path) -> None:
    from services.datasets.pairs import import_pairs

    with_label = tmp_path / "l.csv"
    with_label.write_text(f"id,reference,candidate,label\na,{REF},{OTHER},1\nb,{REF},{OTHER},0\n", encoding="utf-8")
    without = tmp_path / "n.csv"
    without.write_text(f"id,reference,candidate\na,{REF},{OTHER}\n", encoding="utf-8")
    from services.datasets.store import get_dataset

    engine = get_engine()
    saved, _ = import_pairs(engine, path=with_label, task="summarization")
    assert get_dataset(engine, saved.id).meta["label_counts"]["binary"] == 2
    saved, _ = import_pairs(engine, path=without, task="summarization")
    assert not get_dataset(engine, saved.id).meta["label_counts"].get("binary")


def test_after_the_output_cannot_be_written_the_same_command_writes_that_batchs_results(env, pairs, tmp_path, capsys):
    """The message says the results are kept and the same command again writes them: it writes the finished
    batch's lines, and makes no new batch from the cache."""
    blocker = tmp_path / "out"
    blocker.write_text("a file where the output's folder should be", encoding="utf-8")
    out = blocker / "o.jsonl"
    assert cli.main(["evaluate", "--input", pairs, "--output", str(out), "--method", "evidence"]) == 1
    err = capsys.readouterr().err
    (first,) = [b.id for b in batches.list_batches(get_engine())]
    assert f"cannot write {out}" in err and "the same command again writes them" in err and f"batch {first}" in err
    blocker.unlink()
    assert cli.main(["evaluate", "--input", pairs, "--output", str(out), "--method", "evidence"]) == 0
    assert [line["batch"] for line in read_lines(out)] == [first, first]
    assert [b.id for b in batches.list_batches(get_engine())] == [first], "no new batch"
    # Written, the same command again starts a new batch (from the cache), as before.
    assert cli.main(["evaluate", "--input", pairs, "--output", str(out), "--method", "evidence"]) == 0
    assert read_lines(out)[0]["batch"] != first
