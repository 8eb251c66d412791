"""`cli.py evaluate` beside a batch, against a local OpenAI-compatible server with a fixed 200 ms latency.

The documents of bench/batch_throughput.py (500 by default, 4 summary sentences each), 64 requests in
flight, for both converters. For the command line it prints the start-up (process start to the first
model request) and the rest of the wall time over the ideal, calls x 0.2 s / 64; for the batch, the
wall time of `process_batch` over the same ideal. With --evidence it also times `--evidence` (rule
converter) beside the evidence checker's own time on the same documents.
Run: .venv/bin/python bench/cli_throughput.py [N] [--repeats R] [--evidence]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from record import record, start  # noqa: E402

from bench.batch_throughput import IN_FLIGHT, LATENCY, article, free_port, make_dataset, start_server  # noqa: E402
from bench.batch_throughput import summary_sentences as sentences  # noqa: E402
from db.engine import make_engine  # noqa: E402
from services import dcr  # noqa: E402
from services.config import BackendConfig  # noqa: E402
from services.jobs import batches  # noqa: E402


def write_pairs(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": str(i), "reference": article(i), "candidate": " ".join(sentences(i))}) + "\n")


def cli_env(port: int, db: Path, tmp: Path) -> dict[str, str]:
    """The environment of a `cli.py evaluate` process against the latency server on `port`."""
    return os.environ | {
        "LLM_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "LLM_MODEL": "latency-model",
        "LLM_API_KEY": "x",
        "LLM_MAX_RETRIES": "0",
        "LLM_TIMEOUT": "30",
        "DATABASE_URL": f"sqlite:///{db}",
        "DATA_DIR": str(tmp / "data"),
    }


def cli_run(tmp: Path, port: int, pairs: Path, amc: str, tag: str, *extra: str) -> tuple[float, float, int]:
    """(start-up s, wall after the first request s, calls) of one `cli.py evaluate` on a fresh database."""
    first = tmp / f"first-{tag}"
    server = start_server(port, first_request_file=str(first))
    env = cli_env(port, tmp / f"cli-{tag}.db", tmp)
    out = tmp / f"out-{tag}.jsonl"
    cmd = [sys.executable, str(ROOT / "cli.py"), "evaluate", "--input", str(pairs), "--output", str(out)]
    try:
        t0 = time.time()
        subprocess.run(
            [*cmd, "--amc", amc, "--concurrency", str(IN_FLIGHT), *extra],
            env=env,
            check=True,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
        )
        end = time.time()
    finally:
        server.terminate()
        server.wait()
    started = float(first.read_text())
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert not any(x["error"] for x in lines), "some documents failed"
    return started - t0, end - started, sum(x["usage"]["calls"] for x in lines)


def batch_run(tmp: Path, port: int, n: int, amc: str, tag: str) -> tuple[float, int]:
    """(wall s, calls) of one in-process batch on a fresh database."""
    server = start_server(port)
    try:
        engine = make_engine(f"sqlite:///{tmp}/batch-{tag}.db", concurrency=IN_FLIGHT)
        backend = BackendConfig(
            kind="openai",
            base_url=f"http://127.0.0.1:{port}/v1",
            model="latency-model",
            concurrency=IN_FLIGHT,
            max_retries=0,
            timeout=30,
        )
        bid = batches.create_batch(
            engine,
            dataset_id=make_dataset(engine, n),
            backend=backend,
            cfg=dcr.DCRConfig(amc=amc),
            concurrency=IN_FLIGHT,
        )
        t = time.perf_counter()
        batches.process_batch(engine, bid, backend=backend)
        wall = time.perf_counter() - t
        p = batches.progress(engine, bid)
        assert p is not None and p.done == n, p
        engine.dispose()
        return wall, p.calls
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", nargs="?", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--evidence", action="store_true", help="also time cli.py evaluate --evidence")
    args = ap.parse_args()
    n, began, figures = args.n, start(), {}
    print(f"{n} documents, 4 sentences each; server latency {LATENCY * 1000:.0f} ms; {IN_FLIGHT} in flight")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        pairs = tmp / "pairs.jsonl"
        write_pairs(pairs, n)
        for amc in ("rule", "llm"):
            cli_ratios, batch_ratios, startups = [], [], []
            for k in range(args.repeats):
                startup, rest, calls = cli_run(tmp, free_port(), pairs, amc, f"{amc}{k}")
                ideal = calls * LATENCY / IN_FLIGHT
                cli_ratios.append(rest / ideal)
                startups.append(startup)
                wall, bcalls = batch_run(tmp, free_port(), n, amc, f"{amc}{k}")
                batch_ratios.append(wall / (bcalls * LATENCY / IN_FLIGHT))
                print(
                    f"converter {amc:4}: cli.py evaluate start-up {startup:.2f} s, then {rest:.2f} s for {calls} "
                    f"calls (ideal {ideal:.2f} s, ratio {rest / ideal:.3f}) | batch {wall:.2f} s for {bcalls} calls "
                    f"(ratio {batch_ratios[-1]:.3f})"
                )
            print(
                f"converter {amc}, median of {args.repeats}: cli.py evaluate ratio {statistics.median(cli_ratios):.3f}"
                f" (start-up {statistics.median(startups):.2f} s), batch ratio {statistics.median(batch_ratios):.3f}"
            )
            figures |= {
                f"converter {amc}: cli.py evaluate start-up s": statistics.median(startups),
                f"converter {amc}: cli.py evaluate after the first request, over the ideal": statistics.median(
                    cli_ratios
                ),
                f"converter {amc}: batch wall over the ideal": statistics.median(batch_ratios),
            }
        if args.evidence:
            startup, rest, calls = cli_run(tmp, free_port(), pairs, "rule", "evidence", "--evidence")
            ideal = calls * LATENCY / IN_FLIGHT
            print(
                f"converter rule with --evidence: start-up {startup:.2f} s, then {rest:.2f} s for {calls} calls "
                f"(ideal {ideal:.2f} s, ratio {rest / ideal:.3f})"
            )
            from services.dcr import evidence

            t = time.perf_counter()
            evidence.analyse_many([(article(i), sentences(i)) for i in range(n)], noun="article")
            print(f"the evidence checker alone on the same {n} documents: {time.perf_counter() - t:.2f} s")
            figures |= {
                "--evidence: after the first request, over the ideal": rest / ideal,
                f"the evidence checker alone on {n} documents s": time.perf_counter() - t,
            }
    record("cli", "cli_throughput", figures, started=began)


if __name__ == "__main__":
    main()
