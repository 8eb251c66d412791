"""cli.py starts at once: help and argument errors load no subcommand's services, and a database at the current
schema opens without Alembic. What a process loaded is read from its sys.modules, never from a clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clitools import METHODS, TASKS

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("openai", "scipy", "alembic", "services.dcr", "pandas", "sqlalchemy", "sqlmodel", "numpy", "torch")

# Runs cli.py as `python cli.py ARGS` would, then prints the modules it loaded and its exit code.
PROBE = """
import json, runpy, sys
sys.argv = ["cli.py", *json.loads(sys.argv[1])]
code = 0
try:
    runpy.run_path("cli.py", run_name="__main__")
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def cli_subcommands() -> list[str]:
    import cli

    return list(cli.SUBCOMMANDS)


def loaded_by(*args: str) -> tuple[int, set[str], str]:
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(args))], cwd=ROOT, env=env, capture_output=True, text=True
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out["code"], set(out["modules"]), proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "args",
    [("--help",), ("evaluate", "--help"), ("batch", "--help"), ("evaluate", "--input", "x.jsonl"), ("nosuch",)],
    ids=["help", "evaluate-help", "batch-help", "evaluate-missing-output", "unknown-command"],
)
def test_help_and_argument_errors_load_none_of_the_services(args):
    code, modules, out = loaded_by(*args)
    assert code == (0 if "--help" in args else 2), out
    heavy = sorted(m for m in modules if m.startswith(HEAVY))
    assert not heavy, heavy


SUBCOMMAND_HELPS = [(*name.split(), "--help") for name in [*cli_subcommands(), "dhp run", "dhp stats"]]
# A required option left out: argparse refuses the line before the subcommand runs.
ARGUMENT_ERRORS = [
    ("alpha", "--input", "r.csv"),
    ("report",),
    ("distill", "--run", "1"),
    ("conseval", "--criteria", "Factuality"),
    ("dhp",),
    ("dhp", "stats", "--scores", "s.csv"),
    ("card", "--input", "x.jsonl"),
    ("compare", "--input", "x.jsonl"),
    ("compare", "--input", "x.jsonl", "--output", "o.json", "--method", "no-such-method"),
    ("batch", "--dataset", "x.jsonl"),
    ("alpha", "--input", "r.csv", "--level", "no-such-level"),
]


@pytest.mark.parametrize("args", SUBCOMMAND_HELPS, ids=lambda a: "-".join(a[:-1]))
def test_every_subcommands_help_loads_none_of_the_services(args):
    code, modules, out = loaded_by(*args)
    assert code == 0 and "usage:" in out, out
    heavy = sorted(m for m in modules if m.startswith(HEAVY))
    assert not heavy, heavy


@pytest.mark.parametrize("args", ARGUMENT_ERRORS, ids=lambda a: "-".join(a))
def test_every_subcommands_argument_errors_load_none_of_the_services(args):
    code, modules, out = loaded_by(*args)
    assert code == 2 and "error:" in out, out
    heavy = sorted(m for m in modules if m.startswith(HEAVY))
    assert not heavy, heavy


def test_the_parser_defaults_are_the_services_own():
    import clitools
    from db.models import REPORT_KINDS
    from services import conseval, dhp, metaeval, stats
    from services.nli import distill

    assert clitools.LEVELS == tuple(stats.LEVELS)
    assert clitools.REPORT_KINDS == tuple(REPORT_KINDS)
    assert (clitools.REPORT_THRESHOLD, clitools.REPORT_SEED, clitools.REPORT_BOOT) == (
        metaeval.DEFAULT_THRESHOLD,
        metaeval.DEFAULT_SEED,
        metaeval.DEFAULT_BOOT,
    )
    assert clitools.REPORT_PROBABILITY_THRESHOLD == metaeval.binary.default_threshold("evidence")
    assert (clitools.DISTILL_SEED, clitools.DISTILL_TEST_SHARE) == (distill.DEFAULT_SEED, distill.DEFAULT_TEST_SHARE)
    assert clitools.CONSEVAL_ANSWER_FORMATS == tuple(conseval.ANSWER_FORMATS)
    assert clitools.CONSEVAL_SPLITS == tuple(conseval.SPLITS)
    assert clitools.DHP_ANSWER_FORMATS == tuple(dhp.ANSWER_FORMATS)


def test_the_overall_help_lists_every_subcommand():
    import cli

    text = cli.build_parser(["--help"]).format_help()
    for name, line in cli.SUBCOMMANDS.items():
        assert name in text and line[:40] in " ".join(text.split())


def test_the_parser_choices_are_the_services_own_names():
    from services import dcr
    from services.nli import paradigms as nli

    assert list(METHODS) == [*dcr.METHOD_LABELS, *nli.METHOD_LABELS]
    assert list(TASKS) == list(dcr.TASK_LABELS)
    assert dcr.DEFAULT_ALPHA == 0.0 and dcr.DEFAULT_BETA == 0.0  # the defaults `evaluate` writes out


def test_the_heads_read_from_the_files_are_alembics(tmp_path):
    from alembic.script import ScriptDirectory

    from db.engine import alembic_config, make_engine, script_heads

    engine = make_engine("sqlite://")
    try:
        assert script_heads() == set(ScriptDirectory.from_config(alembic_config(engine)).get_heads())
    finally:
        engine.dispose()


def test_a_database_at_the_current_schema_opens_without_alembic(tmp_path):
    url = f"sqlite:///{tmp_path / 'made.db'}"
    env = os.environ | {"PYTHONPATH": str(ROOT), "DATABASE_URL": url}
    check = (
        "import sys; from services.database import make_engine; make_engine().dispose(); "
        "print('alembic' in sys.modules)"
    )
    first = subprocess.run([sys.executable, "-c", check], cwd=ROOT, env=env, capture_output=True, text=True)
    again = subprocess.run([sys.executable, "-c", check], cwd=ROOT, env=env, capture_output=True, text=True)
    assert first.stdout.strip() == "True", first.stderr  # a new database: Alembic creates the schema
    assert again.stdout.strip() == "False", again.stderr


# cli.py evaluate as a program, counting the sentence splits done in the process that sends the requests.
EVALUATE_PROBE = """
import json, os, runpy, sys
sys.argv = ["cli.py", *json.loads(sys.argv[1])]
from services.datasets import readers
parent, real_split, real_exit, here = os.getpid(), readers.split_sentences, os._exit, []
def split(text):
    if os.getpid() == parent:
        here.append(text)
    return real_split(text)
def leave(code):
    if os.getpid() == parent:
        print(json.dumps({"code": code, "split_here": len(here)}), flush=True)
    real_exit(code)
readers.split_sentences, os._exit = split, leave
runpy.run_path("cli.py", run_name="__main__")
"""


def _evaluate(tmp_path: Path, rows: list[dict] | str, base_url: str) -> tuple[dict, str]:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(rows if isinstance(rows, str) else "".join(json.dumps(r) + "\n" for r in rows))
    env = os.environ | {
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}",
        "LLM_BASE_URL": base_url,
        "LLM_MODEL": "fake-model",
        "LLM_MAX_RETRIES": "0",
    }
    args = ["evaluate", "--input", str(pairs), "--output", str(tmp_path / "out.jsonl")]
    proc = subprocess.run(
        [sys.executable, "-c", EVALUATE_PROBE, json.dumps(args)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2,
    reason="the file is imported beside the client only on Linux with two cores",
)
def test_evaluate_splits_the_file_in_a_child_while_it_loads_the_client(tmp_path):
    from sqlalchemy import create_engine, text

    from tests.fakes import FakeOpenAIServer, toy_judge
    from tests.support.batches import BAD, FIX, REF

    rows = [
        {"id": f"d{i}", "reference": REF, "candidate": f"It cost {BAD} dollars on day {i}. It ended."} for i in range(6)
    ]
    with FakeOpenAIServer(responder=toy_judge(BAD, FIX)) as fake:
        out, err = _evaluate(tmp_path, rows, fake.base_url)
        again, err_again = _evaluate(tmp_path, rows, fake.base_url)  # the same file: found by its hash
    assert out == {"code": 0, "split_here": 0}, err
    assert again == {"code": 0, "split_here": 0}, err_again
    lines = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == [r["id"] for r in rows]
    assert all(line["error"] is None and line["k"] == 2 for line in lines)
    eng = create_engine(f"sqlite:///{tmp_path / 'cli.db'}")
    try:
        with eng.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM dataset")).scalar() == 1
    finally:
        eng.dispose()


def test_evaluate_reports_a_file_it_cannot_read_once_with_no_traceback(tmp_path):
    out, err = _evaluate(tmp_path, "this is not JSON\n", "http://127.0.0.1:9/v1")
    assert out["code"] == 2, err
    assert err.count("error:") == 1 and "Traceback" not in err, err


# As PROBE, for a command that leaves through os._exit (evaluate): the modules are printed on the way out.
EXIT_PROBE = """
import json, os, runpy, sys
sys.argv = ["cli.py", *json.loads(sys.argv[1])]
def leave(code):
    print(json.dumps({"code": code, "modules": sorted(sys.modules)}), flush=True)
    os.__dict__["_real_exit"](code)
os.__dict__["_real_exit"] = os._exit
os._exit = leave
runpy.run_path("cli.py", run_name="__main__")
"""


def test_the_evidence_checker_starts_without_the_model_client_or_nltks_package(tmp_path):
    """The checker calls no model and needs only nltk's stemmer: importing the OpenAI SDK (its typed models)
    and nltk's package (scipy.stats, scikit-learn) was 2 of its 4 s of CPU at start-up, before any document."""
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        json.dumps({"id": "1", "reference": "The council met on Tuesday in Leeds.", "candidate": "The council met."})
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    env = os.environ | {"PYTHONPATH": str(ROOT), "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    args = ["evaluate", "--method", "evidence", "--input", str(pairs), "--output", str(out)]
    proc = subprocess.run(
        [sys.executable, "-c", EXIT_PROBE, json.dumps(args)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, proc.stdout + proc.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["sentences"][0]["verdict"] == "consistent"  # it did check
    loaded = set(report["modules"])
    assert not sorted(m for m in loaded if m.split(".")[0] in ("openai", "nltk", "scipy", "sklearn"))
