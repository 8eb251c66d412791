"""What the Judges and Meta-evaluation pages read of a batch of each method: CPU seconds and peak memory at 1k-100k.

For each size it seeds a SQLite database as bench/scale_pages.py does (a dataset, a finished batch of each method:
DCE, the offline evidence checker, Summ-NLI, Sent-NLI, QG-QA), then, each in a child process of its own (its CPU
seconds and peak resident memory are its own: they hold on a loaded machine, unlike wall times):

  judges     services.judges.judge_frame: the batch as one judge of the Judges page (prediction, verdict, costs)
  metaeval   services.metaeval.load_batch with the sentences and human_agreement (1,000 resamples): what the
             Meta-evaluation page reads for its Human agreement tab, the one that reads the most

`--db PATH` (repeatable) measures a database seeded before (bench/scale_pages.py's seed; its size is read from
it); opening one written before the result columns migrates it first, and `upgrade` reports that migration's CPU
seconds.

Run: .venv/bin/python bench/page_reads.py [SIZES ...] [--db PATH ...] [--methods ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import method_batches as mb  # noqa: E402
from record import record, start  # noqa: E402


def _child(what: str, url: str, batch_id: int) -> dict:
    from services.database import get_engine

    t = time.process_time()
    engine = get_engine(url)  # an older database is migrated here
    if what == "upgrade":
        return {"cpu_s": time.process_time() - t}
    from services import judges
    from services.metaeval import load_batch
    from services.metaeval.agreement import human_agreement

    t = time.process_time()
    if what == "judges":
        frame = judges.judge_frame(engine, judges.data.batches(engine, [batch_id])[0])
        check = float(frame["prediction"].mean())
    else:
        data = load_batch(engine, batch_id)
        h = human_agreement(data=data)
        check = h.model_vs_majority.alpha if h.model_vs_majority else float("nan")
    return {"cpu_s": time.process_time() - t, "check": check}


def measure(what: str, url: str, batch_id: int) -> dict:
    """One read in a child process: its CPU seconds, the process's peak memory and a value to compare."""
    cmd = [sys.executable, __file__, "--child", what, url, str(batch_id)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=os.environ | {"PYTHONPATH": str(ROOT)})
    if res.returncode:
        raise RuntimeError(res.stderr[-3000:])
    return json.loads(res.stdout.strip().splitlines()[-1])


def batch_ids(url: str) -> tuple[int, dict[str, int]]:
    """The items of the database's dataset and each method's batch id."""
    from sqlalchemy import create_engine, text

    with create_engine(url).connect() as conn:
        n = conn.execute(text("SELECT n_items FROM dataset ORDER BY id LIMIT 1")).scalar_one()
        ids = {m: i for i, m in conn.execute(text("SELECT id, method FROM batch ORDER BY id"))}
    return int(n), ids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sizes", nargs="*", type=int, default=None, help="default: 1,000, 10,000, 50,000 and 100,000")
    ap.add_argument("--db", action="append", default=[], help="a database seeded before (its size is read from it)")
    ap.add_argument("--methods", nargs="*", default=list(mb.METHODS), choices=mb.METHODS)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        out = _child(args.child[0], args.child[1], int(args.child[2]))
        out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(out))
        return
    import scale_pages

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| items | method | read | CPU s | peak MB |\n|---|---|---|---|---|")
    began, rows = start(), []
    with tempfile.TemporaryDirectory(prefix="cs-reads-") as tmp:
        sizes = args.sizes if args.sizes is not None else [] if args.db else [1000, 10_000, 50_000, 100_000]
        seeded = []
        for n in sizes:
            seeded.append(f"sqlite:///{tmp}/reads-{n}.db")
            scale_pages.seed(seeded[-1], n, tuple(args.methods))
        for url in [*seeded, *(f"sqlite:///{db}" for db in args.db)]:
            if url not in seeded:
                r = measure("upgrade", url, 0)
                print(f"| (opened: migrations) | | upgrade | {r['cpu_s']:.2f} | {r['peak_mb']:.0f} |", flush=True)
            n, ids = batch_ids(url)
            for method in args.methods:
                for what in ("judges", "metaeval"):
                    r = measure(what, url, ids[method])
                    print(f"| {n:,} | {method} | {what} | {r['cpu_s']:.2f} | {r['peak_mb']:.0f} |", flush=True)
                    rows.append({"items": n, "method": method, "read": what, "CPU s": r["cpu_s"]})
                    rows[-1] |= {"peak MB": r["peak_mb"], "value": r["check"]}
            if url in seeded:
                Path(url.removeprefix("sqlite:///")).unlink()
    record(
        "pages",
        "page_reads",
        {"Judges and Meta-evaluation reads of a batch of each method (SQLite)": rows},
        started=began,
        plot={
            "table": "Judges and Meta-evaluation reads of a batch of each method (SQLite)",
            "x": "items",
            "y": ["CPU s"],
            "group": "method",
        },  # fmt: skip
    )


if __name__ == "__main__":
    main()
