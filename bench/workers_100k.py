"""A 100,000-item batch on PostgreSQL with 4 worker processes, while the pages are opened in Chromium.

Starts a throwaway PostgreSQL (tests/db/pg.py), seeds the synthetic dataset of bench/pages_render.py (5-sentence
summaries with worker votes) with bulk inserts, starts the latency server (bench/latency_server.py: an agreeable
judge answering after LATENCY seconds), creates a DCE batch over the dataset (rule converter, no improvement
rounds) and hands it to the workers: WORKERS processes of `python -m services.worker` (what `make worker` runs),
which join it through the database. Meanwhile the app runs (`python serve.py`, no worker of its own) and a
headless Chromium opens Batches, Meta-evaluation, Judges, Datasets, Reports and History in turn, each in a new
session, timing first content, complete, drawn and settled as bench/scale_pages.py does (Batches, which polls the
running batch every 1.5 s, until drawn: its complete is when its first run was over and drawn, its drawn when it
was also still for a second between two polls).

At the end it checks that every item was done exactly once (done = n, no failure, no item attempted twice, as
many model requests as items) and prints the wall time, items per second, the workers' CPU seconds, the app's
peak RSS and CPU, and per page the median and worst first-content, complete and settled times over the visits.

Run: .venv/bin/python bench/workers_100k.py [--items 100000] [--workers 4] [--latency 0.05] [--in-flight 16]
     [--sqlite]  (a SQLite file instead of PostgreSQL) [--nice N]  (the workers at a lower priority, `nice -n N`)
     [--nice-db]  (PostgreSQL's backends serving the workers at that priority too: their nice and, where the
     kernel groups processes by session, their session group's nice in /proc/PID/autogroup)
     [--nice-server]  (the latency server, which stands for a model on another machine, at that priority too)
     [--pages Meta-evaluation ...]  (only these pages)
     [--in-session]  (one reader's tab: the first page opened in a new session, every later visit by the
     sidebar's link within it, as a reader moves between pages; without it each visit is a new session)
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pages_render as pr  # noqa: E402  (sets a DATABASE_URL of its own: every call below names its URL)
from record import record, start  # noqa: E402
from scale_pages import Monitor, browser_monitor, drive, start_app  # noqa: E402

from bench.batch_throughput import free_port, start_server  # noqa: E402

POLLING = {"Batches"}  # pages that poll a running batch and so never stay still while it runs
PAGES = [
    ("Batches", "Batches?batch={batch}"),
    ("Meta-evaluation", "Meta-evaluation?batch={batch}"),
    ("Judges", "Judges"),
    ("Datasets", "Datasets?dataset={dataset}"),
    ("Reports", "Reports"),
    ("History", "History"),
]


def seed(url: str, n: int) -> int:
    """The dataset (documents, items with worker votes); returns its id."""
    from db.models import utcnow
    from services.database import get_engine

    with get_engine(url).begin() as conn:
        now = utcnow()
        pr.seed_documents(conn, n, now)
        ds_id, _, _ = pr.seed_dataset(conn, n, now, random.Random(0))
    return ds_id


def make_batch(url: str, ds_id: int, base_url: str, in_flight: int) -> int:
    """A DCE batch over the dataset, handed to the workers (they join batches marked enqueued)."""
    from db import batches as db_batches
    from services.config import BackendConfig
    from services.database import get_engine
    from services.dcr import DCRConfig
    from services.jobs import batches

    engine = get_engine(url)
    backend = BackendConfig(
        kind="openai", base_url=base_url, model="latency-model", concurrency=in_flight, max_retries=2, timeout=60
    )
    bid = batches.create_batch(
        engine, dataset_id=ds_id, backend=backend, cfg=DCRConfig(amc="rule", max_rounds=0), concurrency=in_flight
    )
    with engine.begin() as conn:
        db_batches.set_enqueued(conn=conn, batch_ids=[bid])
    return bid


def start_workers(k: int, url: str, tmp: Path, base_url: str, nice: int = 0) -> list[subprocess.Popen]:
    env = {key: v for key, v in os.environ.items() if not key.upper().startswith(("LLM_", "OPENAI_", "STREAMLIT_"))}
    env.update(
        DATABASE_URL=url,
        DATA_DIR=str(tmp / "data"),
        CONSISTENCY_SECRETS_FILE=str(tmp / "no-secrets.toml"),
        LLM_BASE_URL=base_url,
        LLM_MODEL="latency-model",
        PYTHONPATH=str(ROOT),
        PGAPPNAME=WORKER_APP,  # libpq's application name: how --nice-db finds the workers' backends
    )
    procs = []
    prefix = ["nice", "-n", str(nice)] if nice else []
    for w in range(k):
        log = open(tmp / f"worker-{w}.log", "wb")
        procs.append(
            subprocess.Popen(
                [*prefix, sys.executable, "-m", "services.worker", "--threads", "1"],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
    return procs


WORKER_APP = "cs-bench-worker"


def renice_worker_backends(url: str, nice: int):
    """Every 2 s, PostgreSQL's backend processes serving the workers (by application name) get the workers'
    priority; returns the event that stops it. The app's backends keep theirs."""
    import threading

    from sqlalchemy import create_engine, text

    stop = threading.Event()

    def loop() -> None:
        engine = create_engine(url)
        done: set[int] = set()
        while not stop.wait(2.0):
            with engine.connect() as conn:
                pids = conn.execute(
                    text("SELECT pid FROM pg_stat_activity WHERE application_name = :a"), {"a": WORKER_APP}
                ).scalars()
                for pid in set(pids) - done:
                    try:
                        os.setpriority(os.PRIO_PROCESS, pid, nice)
                        done.add(pid)
                    except OSError:
                        continue
                    # Each backend is a session of its own (PostgreSQL calls setsid), so where the kernel groups
                    # processes by session (sched_autogroup_enabled) its nice orders it only within its own
                    # group: the group's weight is what competes with the app's, and it is set here.
                    try:
                        Path(f"/proc/{pid}/autogroup").write_text(str(nice))
                    except OSError:
                        pass
        engine.dispose()

    threading.Thread(target=loop, daemon=True).start()
    return stop


def check(url: str, bid: int, n: int) -> dict[str, int]:
    """How the items ended: done, failed, attempted more than once, model requests."""
    from sqlalchemy import func, select

    from db.models import BatchItem
    from services.database import get_engine

    with get_engine(url).connect() as conn:
        q = select(
            func.count().filter(BatchItem.status == "done"),
            func.count().filter(BatchItem.status == "failed"),
            func.count().filter(BatchItem.attempts > 1),
            func.coalesce(func.sum(BatchItem.calls), 0),
            func.count(),
        ).where(BatchItem.batch_id == bid)
        done, failed, again, calls, total = conn.execute(q).one()
    return {"items": total, "done": done, "failed": failed, "attempted twice": again, "model requests": calls}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--in-flight", type=int, default=16, help="requests each worker keeps open")
    ap.add_argument("--sqlite", action="store_true")
    ap.add_argument(
        "--nice",
        type=int,
        default=0,
        help="start the workers at this lower priority (nice -n N), as a deployment that keeps the app responsive",
    )
    ap.add_argument(
        "--nice-db",
        action="store_true",
        help="PostgreSQL's backends serving the workers at the workers' priority too (as if on their own machine)",
    )
    ap.add_argument(
        "--nice-server",
        action="store_true",
        help="the latency server at the workers' priority too (it stands for a model served on another machine)",
    )
    ap.add_argument("--pages", nargs="*", default=None, help="only these pages (names as printed)")
    ap.add_argument(
        "--in-session",
        action="store_true",
        help="one reader's tab: the first page opened in a new session, every later one by the sidebar's link",
    )
    args = ap.parse_args()
    pages = [(name, path) for name, path in PAGES if not args.pages or name in args.pages]
    from playwright.sync_api import sync_playwright

    from services.database import get_engine
    from services.jobs import batches
    from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

    tmp = Path(tempfile.mkdtemp(prefix="cs-workers-"))
    if args.sqlite:
        url = f"sqlite:///{tmp}/workers.db"
    else:
        from tests.db.pg import cluster

        url = cluster().new_database("workers")
    n = args.items
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {'SQLite' if args.sqlite else 'PostgreSQL'}"
    )
    began = start()
    t = time.perf_counter()
    ds_id = seed(url, n)
    print(f"seeded {n:,} items in {time.perf_counter() - t:.0f} s", flush=True)
    port = free_port()
    server = start_server(port, args.latency, nice=args.nice if args.nice_server else 0)
    base_url = f"http://127.0.0.1:{port}/v1"
    bid = make_batch(url, ds_id, base_url, args.in_flight)
    app, app_url = start_app(tmp, url, None)
    app_mon = Monitor(app.pid)
    with sync_playwright() as p:  # the server's imports, once per process, before the run
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        for path in ("", "Datasets"):
            ctx = browser.new_context()
            drive(ctx.new_page(), f"{app_url}/{path}", app_mon)
            ctx.close()
        browser.close()
    workers = start_workers(args.workers, url, tmp, base_url, args.nice)
    mons = [Monitor(w.pid) for w in workers]
    stop_renice = renice_worker_backends(url, args.nice) if args.nice_db and args.nice and not args.sqlite else None
    t0 = time.perf_counter()
    visits: dict[str, list[dict[str, float]]] = {name: [] for name, _ in pages}
    ids = {"batch": bid, "dataset": ds_id}
    engine = get_engine(url)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            browser_mon = browser_monitor()
            i, session = 0, None
            while True:
                prog = batches.progress(engine, bid)
                left = prog.pending + prog.running
                print(
                    f"  {time.perf_counter() - t0:6.0f} s: {prog.done:,} done, {prog.failed:,} failed, {left:,} left",
                    flush=True,
                )
                if not left:
                    break
                if any(w.poll() is not None for w in workers):
                    raise RuntimeError("a worker exited: see its log in " + str(tmp))
                name, path = pages[i % len(pages)]
                i += 1
                # Batches polls the running batch every 1.5 s: it is timed until drawn (complete, then still for 1 s)
                if args.in_session and session is not None and len(pages) > 1:
                    r = drive(
                        session,
                        path.split("?")[0],
                        app_mon,
                        until_drawn=name in POLLING,
                        title=name,
                        browser=browser_mon,
                    )
                else:
                    ctx = browser.new_context(viewport={"width": 1400, "height": 1400})
                    page = ctx.new_page()
                    address = f"{app_url}/{path.format(**ids)}"
                    r = drive(page, address, app_mon, until_drawn=name in POLLING, browser=browser_mon)
                    if args.in_session:
                        session = page  # the reader's one tab: every later visit is by the sidebar
                    else:
                        ctx.close()
                visits[name].append(r)
                settled = "polls" if r["settled"] is None else f"{r['settled']:.1f} s"
                print(
                    f"    {name}: first content {r['first']:.1f} s, complete {r['complete']:.1f} s, "
                    f"drawn {r['drawn']:.1f} s, settled {settled}, "
                    f"app CPU {r['cpu']:.1f} s, browser CPU {r['browser_cpu']:.1f} s, app peak RSS {r['rss']:.0f} MB, "
                    f"load average {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
            browser_mon.stop()
            browser.close()
        wall = time.perf_counter() - t0
        worker_cpu = sum(m.cpu() for m in mons)
    finally:
        if stop_renice is not None:
            stop_renice.set()
        for m in [app_mon, *mons]:
            m.stop()
        for proc in [*workers, app, server]:
            proc.terminate()
        for proc in [*workers, app, server]:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
    got = check(url, bid, n)
    for log in sorted(tmp.glob("*.log")):
        text = log.read_text(errors="replace")
        if "Traceback" in text:
            print(f"  {log.name} has a traceback:\n{text[-3000:]}")
    nice = f", workers at nice {args.nice}" if args.nice else ""
    nice += " (their PostgreSQL backends too)" if args.nice and args.nice_db and not args.sqlite else ""
    nice += " (the model server too)" if args.nice and args.nice_server else ""
    latency = f"latency {args.latency * 1000:.0f} ms"
    print(f"\n{n:,} items, {args.workers} workers x {args.in_flight} in flight, {latency}{nice}")
    print("  " + ", ".join(f"{k} {v:,}" for k, v in got.items()))
    once = got["done"] == n and not got["failed"] and not got["attempted twice"] and got["model requests"] == n
    print(f"  every item exactly once: {'yes' if once else 'NO'}")
    ideal = n * args.latency / (args.workers * args.in_flight)
    print(
        f"  wall {wall:.0f} s ({n / wall:.0f} items/s; ideal at this latency {ideal:.0f} s); workers' CPU "
        f"{worker_cpu:.0f} s ({1000 * worker_cpu / n:.1f} ms an item); app peak RSS {app_mon.peak_rss / 2**20:.0f} MB"
    )
    print(
        "  page visits during the run (median / worst): first content, complete, drawn, settled, app CPU, browser CPU"
    )
    figures: dict = {
        "items": n,
        "every item exactly once": once,
        "wall s": wall,
        "items/s": n / wall,
        "ideal wall s at this latency": ideal,
        "workers' CPU ms an item": 1000 * worker_cpu / n,
        "app peak RSS MB": app_mon.peak_rss / 2**20,
    }
    visit_rows = []
    for name, rs in visits.items():
        if rs:
            visit_rows.append(
                {
                    "page": name,
                    "visits": len(rs),
                    "first content s (median)": statistics.median(r["first"] for r in rs),
                    "complete s (median)": statistics.median(r["complete"] for r in rs),
                    "drawn s (median)": statistics.median(r["drawn"] for r in rs),
                    "app CPU s (median)": statistics.median(r["cpu"] for r in rs),
                }
            )
            f = [r["first"] for r in rs]
            d = [r["drawn"] for r in rs]
            k = [r["complete"] for r in rs]
            s = [r["settled"] for r in rs if r["settled"] is not None]
            c = [r["cpu"] for r in rs]
            b = [r["browser_cpu"] for r in rs]
            settled = f"{statistics.median(s):.1f} / {max(s):.1f} s" if s else "polls (timed until drawn)"
            print(
                f"    {name:<16} {len(rs)} visits: {statistics.median(f):.1f} / {max(f):.1f} s, "
                f"{statistics.median(k):.1f} / {max(k):.1f} s, "
                f"{statistics.median(d):.1f} / {max(d):.1f} s, {settled}, {statistics.median(c):.1f} / {max(c):.1f} s, "
                f"{statistics.median(b):.1f} / {max(b):.1f} s"
            )

    figures["page visits during the run"] = visit_rows
    record("batches", "workers_100k", figures, started=began)


if __name__ == "__main__":
    main()
