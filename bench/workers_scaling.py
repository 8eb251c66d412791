"""Batch throughput with 1, 2 and 4 worker processes sharing one batch, against a fixed-latency server.

Each worker is a separate process (as on separate machines) that claims items from the database and
keeps IN_FLIGHT requests open; the server (bench/latency_server.py) answers each after LATENCY seconds.
Prints, per worker count, the time from the first claim to the last result (and the wall time with
process start-up), items per second, the speed-up over one worker, and how the items were shared
out. The database is a SQLite file by default; --database-url postgresql://... measures PostgreSQL.

Run: .venv/bin/python bench/workers_scaling.py [--items 400] [--latency 0.5] [--in-flight 8] [--workers 1 2 4]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from record import record, start  # noqa: E402
from sqlmodel import Session, select  # noqa: E402

from bench.batch_throughput import free_port, start_server  # noqa: E402
from db.engine import make_engine  # noqa: E402
from db.models import Batch, BatchItem, Dataset, DatasetItem, Document  # noqa: E402
from services import dcr  # noqa: E402
from services.config import BackendConfig  # noqa: E402
from services.jobs import batches  # noqa: E402

# A worker that has imported everything and opened the database, then waits for the start signal (a
# file): the figures measure the work, not how long a busy machine takes to start Python processes.
WORKER = """
import pathlib, sys, time
from db.engine import make_engine
from services.jobs import batches
engine = make_engine(sys.argv[1])
go = pathlib.Path(sys.argv[4])
pathlib.Path(sys.argv[4] + "." + sys.argv[3]).touch()
while not go.exists():
    time.sleep(0.01)
batches.process_batch(engine, int(sys.argv[2]), wid=sys.argv[3])
"""


def make_dataset(engine, n: int, *, tag: str) -> int:
    """n documents of four sentences; `tag` keeps the rows of each run apart in a shared database."""
    with Session(engine) as session:
        ds = Dataset(name=f"scaling-{tag}", format="jsonl", sha256=f"scaling-{tag}", n_items=n)
        session.add(ds)
        session.flush()
        for i in range(n):
            doc = Document(sha256=f"scaling-{tag}-{i:06d}", text=f"Article {i} ({tag}). " + "The council met. " * 60)
            session.add(doc)
            session.flush()
            sentences = [f"Summary {i} ({tag}) sentence {j} says the council met." for j in range(4)]
            session.add(
                DatasetItem(
                    dataset_id=ds.id,
                    idx=i,
                    external_id=str(i),
                    reference_id=doc.id,
                    candidate=" ".join(sentences),
                    sentences=sentences,
                )
            )
        session.commit()
        return ds.id


def run(url: str, n_workers: int, items: int, backend: BackendConfig, in_flight: int) -> tuple[float, float, Counter]:
    """(wall time with process start-up, time from the first claim to the last result, items per worker)."""
    engine = make_engine(url)
    ds = make_dataset(engine, items, tag=f"w{n_workers}-{time.time_ns()}")
    bid = batches.create_batch(
        engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(max_rounds=0), concurrency=in_flight
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    go = Path(tempfile.mkdtemp()) / "go"
    t = time.perf_counter()
    wids = [f"bench-worker-{i}" for i in range(n_workers)]
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, url, str(bid), wid, str(go)], env=env, cwd=ROOT) for wid in wids
    ]
    while not all(Path(f"{go}.{wid}").exists() for wid in wids):
        time.sleep(0.05)
    go.touch()
    for p in procs:
        p.wait()
    wall = time.perf_counter() - t
    p = batches.progress(engine, bid)
    assert p is not None and p.done == items, p
    with Session(engine) as s:
        share = Counter(s.exec(select(BatchItem.worker).where(BatchItem.batch_id == bid)).all())
        started = s.get(Batch, bid).started_at
        last = max(s.exec(select(BatchItem.updated_at).where(BatchItem.batch_id == bid)).all())
    engine.dispose()
    return wall, (last - started).total_seconds(), share


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=400)
    ap.add_argument("--latency", type=float, default=0.5, help="seconds the server takes per request")
    ap.add_argument("--in-flight", type=int, default=8, help="requests each worker keeps open")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--database-url", default=None, help="default: a new SQLite file per worker count")
    args = ap.parse_args()

    port = free_port()
    server = start_server(port, args.latency)
    try:
        backend = BackendConfig(
            kind="openai",
            base_url=f"http://127.0.0.1:{port}/v1",
            model="latency-model",
            concurrency=args.in_flight,
            max_retries=0,
            timeout=30,
        )
        print(
            f"{args.items} documents (1 call each), server latency {args.latency * 1000:.0f} ms, "
            f"{args.in_flight} requests in flight per worker, {os.cpu_count()} CPU core(s)"
        )
        base, began, rows = None, start(), []
        with tempfile.TemporaryDirectory() as tmp:
            for n in args.workers:
                url = args.database_url or f"sqlite:///{tmp}/workers-{n}.db"
                wall, busy, share = run(url, n, args.items, backend, args.in_flight)
                rate = args.items / busy
                base = base or rate
                ideal = args.items * args.latency / (n * args.in_flight)
                print(
                    f"{n} worker(s): first claim to last result {busy:6.2f} s (ideal {ideal:5.2f} s), "
                    f"{rate:6.1f} items/s, speed-up {rate / base:4.2f}x; wall with start-up {wall:6.2f} s; "
                    f"items per worker {sorted(share.values(), reverse=True)}"
                )
                rows.append(
                    {
                        "workers": n,
                        "first claim to last result s": busy,
                        "ideal s": ideal,
                        "items/s": rate,
                        "speed-up": rate / base,
                        "wall with start-up s": wall,
                    }
                )
        database = "PostgreSQL" if args.database_url else "SQLite"
        label = (
            f"{args.items} items, {args.latency * 1000:.0f} ms latency, {args.in_flight} in flight a worker, {database}"
        )
        record("batches", "workers_scaling", {label: rows}, started=began)
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
