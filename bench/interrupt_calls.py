"""Calls paid for an interrupted `cli.py evaluate` and its resume: SIGINT with requests in flight, then the
same command again. Prints items, calls over both runs, and the calls sent twice (calls - items).

The model server (tests/fakes.py) answers after `--latency` seconds; the run is interrupted once `--after`
requests have arrived. Run: .venv/bin/python bench/interrupt_calls.py [N] [--concurrency C] [--after K]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from record import record, start  # noqa: E402

from tests.fakes import FakeOpenAIServer, toy_judge  # noqa: E402
from tests.support.batches import BAD, FIX, REF  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("n", nargs="?", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--after", type=int, default=40, help="interrupt once this many requests have arrived")
    p.add_argument("--latency", type=float, default=0.5)
    a = p.parse_args()
    began = start()
    answer = toy_judge(BAD, FIX)
    seen = {"n": 0}
    lock = threading.Lock()
    reached = threading.Event()

    def respond(body):
        with lock:
            seen["n"] += 1
            if seen["n"] >= a.after:
                reached.set()
        time.sleep(a.latency)
        return answer(body)

    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(responder=respond) as fake:
        pairs, out = Path(tmp) / "pairs.jsonl", Path(tmp) / "out.jsonl"
        rows = [{"id": f"d{i}", "reference": REF, "candidate": f"It cost {BAD} on day {i}."} for i in range(a.n)]
        pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
        env = os.environ | {
            "PYTHONPATH": str(ROOT),
            "DATABASE_URL": f"sqlite:///{tmp}/b.db",
            "LLM_BASE_URL": fake.base_url,
            "LLM_MODEL": "fake-model",
            "LLM_MAX_RETRIES": "0",
        }
        cmd = [sys.executable, "cli.py", "evaluate", "--input", str(pairs), "--output", str(out)]
        cmd += ["--concurrency", str(a.concurrency)]
        first = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
        reached.wait(600)
        first.send_signal(signal.SIGINT)
        _, err = first.communicate(timeout=600)
        at_stop = seen["n"]
        written = sum(json.loads(x)["error"] is None for x in out.read_text().splitlines()) if out.exists() else 0
        second = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        print(f"items {a.n}, concurrency {a.concurrency}, interrupted after {a.after} requests")
        print(f"first run: exit {first.returncode}, {at_stop} calls, {written} results in its output file")
        print(f"resume: exit {second.returncode}; calls over both runs {seen['n']}, sent twice {seen['n'] - a.n}")
        print([x for x in err.splitlines() if x.startswith("interrupted")][:1])
    figures = {
        "items": a.n,
        "calls before the interruption": at_stop,
        "results written by the interrupted run": written,
        "calls over both runs": seen["n"],
        "calls sent twice": seen["n"] - a.n,
    }
    record("batches", "interrupt_calls", figures, started=began)


if __name__ == "__main__":
    main()
