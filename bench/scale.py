"""Scale figures: CPU seconds and peak memory of each step at 1k, 10k, 50k and 100k items.

The data is synthetic and made here: 300-word references (15 sentences of 20 words from a 3,000-word
vocabulary) and candidates of 3-5 sentences, with a human score and label that follow the candidate's share
of words taken from its reference. Each step runs in a child process of its own, which reports its CPU time
(user + system, its own and its children's) and peak resident memory (ru_maxrss): both hold on a loaded
machine, unlike wall times.

Steps:
  stats     every interval of a batch's meta-evaluation: Pearson, Spearman, Kendall and AUROC of the score
            against the human score and label, balanced accuracy at the threshold, Krippendorff's alpha over
            the sentences' votes (3 workers, 4 sentences an item) and the model against the majority (1,000
            resamples, as the pages ask for)
  import    the import of the JSONL file into a fresh SQLite database, read from disk (as `cli.py` and the
            Datasets page's sample button read it)
  upload    the same from the file's bytes in memory, as the Datasets page imports an upload (the uploader
            holds the bytes; the import reads them where they are)
  evaluate  `cli.py evaluate --method evidence` on the file (a child process; its CPU counted)
  batch     a batch against bench/latency_server.py (50 ms, quoting judge) at 64 in flight: client CPU per
            item and wall time over the ideal (calls x latency / 64)

Run: .venv/bin/python bench/scale.py [--sizes 1000,10000,50000,100000] [--steps stats,import,upload,evaluate,batch]
     [--batch-size N] (the batch step runs on at most N items, default 2,000) [--latency 0.05,0.2,0.5,1]
     [--in-flight 64]; SCALE_PROFILE=PATH writes the batch step's cProfile on thread CPU time to PATH.main (the
     loop) and PATH.items (the item threads)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from record import record, start  # noqa: E402

VOCAB_SIZE, REF_SENTENCES, WORDS_PER_SENTENCE = 3000, 15, 20


def _vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(VOCAB_SIZE)]


def _sentence(rng: random.Random, words: list[str], n: int) -> str:
    return " ".join(rng.choice(words) for _ in range(n)).capitalize() + "."


def pair(i: int, vocab: list[str]) -> dict:
    """One synthetic item: a 300-word reference and a 3-5 sentence candidate, with human judgements."""
    rng = random.Random(i)
    ref = [_sentence(rng, vocab, WORDS_PER_SENTENCE) for _ in range(REF_SENTENCES)]
    k = rng.randint(3, 5)
    faithful = rng.random()
    cand = []
    for _ in range(k):
        src = rng.choice(ref)[:-1].split()
        start = rng.randrange(0, len(src) - 10)
        words = [w if rng.random() < faithful else rng.choice(vocab) for w in src[start : start + rng.randint(8, 14)]]
        cand.append(" ".join(words).capitalize() + ".")
    score = min(1.0, max(0.0, faithful + rng.gauss(0, 0.15)))
    return {
        "id": f"s{i}",
        "reference": " ".join(ref),
        "candidate": " ".join(cand),
        "human_score": round(score, 3),
        "label": int(score > 0.5),
    }


def write_file(path: Path, n: int) -> None:
    vocab = _vocabulary(random.Random(0))
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps(pair(i, vocab)) + "\n")


# -- the steps (each in a child process) ---------------------------------------------------------------------
def step_stats(n: int, tmp: Path) -> dict:
    import numpy as np
    import pandas as pd

    from services import stats
    from services.metaeval.summary import correlations

    rng = np.random.default_rng(0)
    human = rng.random(n)
    score = np.clip(human + rng.normal(0, 0.3, n), 0, 1).round(2)  # DCR scores take few distinct values
    label = (human > 0.5).astype(int)
    df = pd.DataFrame({"score": score, "human_score": human, "human_label": label, "document_id": np.arange(n)})
    truth = rng.integers(0, 2, 4 * n)
    votes = np.where(rng.random((3, 4 * n)) < 0.85, truth, 1 - truth).astype(float)
    model = np.where(rng.random(4 * n) < 0.8, truth, 1 - truth).astype(float)
    majority = (votes.sum(axis=0) >= 2).astype(float)
    t = time.process_time()
    corr = correlations(df, seed=0, n_boot=1000)
    cpu_corr = time.process_time() - t
    ba = stats.balanced_accuracy_interval(score, label, 0.5, n_boot=1000, seed=0)
    among = stats.krippendorff_alpha(votes, "nominal", n_boot=1000, seed=0)
    vs = stats.krippendorff_alpha(np.vstack([model, majority]), "nominal", n_boot=1000, seed=0)
    cpu = time.process_time() - t
    assert corr.auroc.ci_low is not None and ba[0] is not None and among.ci_low is not None and vs.ci_low is not None
    # The humans' score as most datasets have it, the share of three raters saying consistent: few values, so up
    # to 5,000 items the correlations' resamples are counted into contingency tables (services/stats/correlation.py)
    thirds = df.assign(human_score=(df["human_score"] * 3).round() / 3)
    t = time.process_time()
    correlations(thirds, seed=0, n_boot=1000)
    thirds_cpu = time.process_time() - t
    return {"cpu_s": cpu, "correlations_cpu_s": cpu_corr, "correlations_cpu_s_humans_in_thirds": thirds_cpu}


def step_import(n: int, tmp: Path) -> dict:
    """The import as the CLI runs it (and the Datasets page's sample button): the file read from disk."""
    return _import(n, tmp, upload=False)


def step_upload(n: int, tmp: Path) -> dict:
    """The import as the Datasets page runs it on an upload: the file's bytes in memory (the uploader's copy,
    here a BytesIO over them), read where they are."""
    return _import(n, tmp, upload=True)


def _import(n: int, tmp: Path, *, upload: bool) -> dict:
    import io

    from db.engine import make_engine
    from services import datasets

    path = tmp / f"pairs-{n}.jsonl"
    db = tmp / f"import-{n}.db"
    db.unlink(missing_ok=True)
    engine = make_engine(f"sqlite:///{db}")
    with path.open("rb") as f:
        head = f.read(65536)
    t = time.process_time()
    mapping = datasets.ColumnMapping(**datasets.default_mapping(datasets.sniff_columns(head, "jsonl")))
    source = io.BytesIO(path.read_bytes()) if upload else path
    saved, summary = datasets.import_file(engine, name=f"scale-{n}", data=source, fmt="jsonl", mapping=mapping)
    cpu = time.process_time() - t
    engine.dispose()
    assert saved.created and summary is not None and summary.n_items == n, summary
    return {"cpu_s": cpu, "file_mb": path.stat().st_size / 1e6}


def step_evaluate(n: int, tmp: Path) -> dict:
    path, out = tmp / f"pairs-{n}.jsonl", tmp / f"evidence-{n}.jsonl"
    env = os.environ | {"DATABASE_URL": f"sqlite:///{tmp}/evaluate-{n}.db", "DATA_DIR": str(tmp / "data")}
    cmd = [sys.executable, str(ROOT / "cli.py"), "evaluate", "--method", "evidence"]
    subprocess.run([*cmd, "--input", str(path), "--output", str(out)], env=env, check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    with out.open(encoding="utf-8") as f:
        rows = sum(1 for _ in f)
    assert rows == n, rows
    return {}


def step_batch(n: int, tmp: Path) -> dict:
    from sqlmodel import Session

    from bench.batch_throughput import free_port, start_server
    from db.engine import make_engine
    from db.models import Dataset, DatasetItem, Document
    from services import dcr
    from services.config import BackendConfig
    from services.jobs import batches
    from services.text import split_sentences

    latency, in_flight = float(os.environ.get("SCALE_LATENCY", "0.05")), int(os.environ.get("SCALE_IN_FLIGHT", "64"))
    engine = make_engine(f"sqlite:///{tmp}/batch-{n}-{latency}.db")
    with Session(engine) as session, (tmp / f"pairs-{n}.jsonl").open(encoding="utf-8") as f:
        ds = Dataset(name=f"scale-{n}", format="jsonl", sha256=f"scale-{n}", n_items=n)
        session.add(ds)
        session.flush()
        for i, line in enumerate(f):
            row = json.loads(line)
            doc = Document(sha256=f"scale-doc-{i}", text=row["reference"])
            session.add(doc)
            session.flush()
            sents = split_sentences(row["candidate"])
            session.add(DatasetItem(dataset_id=ds.id, idx=i, external_id=row["id"], reference_id=doc.id,
                                    candidate=row["candidate"], sentences=sents))  # fmt: skip
        session.commit()
        dataset_id = ds.id
    port = free_port()
    os.environ["LATENCY_QUOTE"] = "1"
    server = start_server(port, latency)
    try:
        backend = BackendConfig(kind="openai", base_url=f"http://127.0.0.1:{port}/v1", model="latency-model",
                                concurrency=in_flight, max_retries=0, timeout=30)  # fmt: skip
        bid = batches.create_batch(engine, dataset_id=dataset_id, backend=backend, cfg=dcr.DCRConfig(amc="rule"),
                                   concurrency=in_flight)  # fmt: skip
        t, w, main = time.process_time(), time.perf_counter(), time.thread_time()
        if os.environ.get("SCALE_PROFILE"):  # CPU by function: PATH.main (the loop), PATH.items (the threads)
            _profiled(engine, bid, backend, os.environ["SCALE_PROFILE"])
        else:
            batches.process_batch(engine, bid, backend=backend)
        cpu, wall, main = time.process_time() - t, time.perf_counter() - w, time.thread_time() - main
        p = batches.progress(engine, bid)
        server_cpu = _process_cpu(server.pid)  # the stand-in judge shares the cores (a real one would not)
    finally:
        server.terminate()
        server.wait()
    # every item settled, each with one call (a few synthetic items fail: see "failed")
    assert p is not None and p.done + p.failed == n and p.calls == n, p
    ideal = p.calls * latency / in_flight
    return {
        "cpu_s": cpu,
        "ms_per_item": cpu / n * 1000,
        "of_ideal": ideal / wall,
        "calls": p.calls,
        "failed": p.failed,
        "main_thread_ms_per_item": main / n * 1000,
        "server_ms_per_call": server_cpu / p.calls * 1000,
        "latency_ms": latency * 1000,
        "wall_s": wall,
        "load": os.getloadavg()[0],
    }


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a running process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _profiled(engine, bid: int, backend, path: str) -> None:
    """process_batch under cProfile on thread CPU time: the main thread's loop, and every item on its thread."""
    import cProfile
    import pstats
    import threading

    from services.jobs import batches
    from services.jobs.batches import work

    local, profiles, process_item = threading.local(), [], work.process_item

    def profiled_item(*a, **kw):
        prof = getattr(local, "prof", None)
        if prof is None:
            prof = local.prof = cProfile.Profile(time.thread_time)
            profiles.append(prof)
        return prof.runcall(process_item, *a, **kw)

    work.process_item = profiled_item
    main = cProfile.Profile(time.thread_time)
    main.runcall(batches.process_batch, engine, bid, backend=backend)
    main.dump_stats(f"{path}.main")
    stats = pstats.Stats(profiles[0])
    for prof in profiles[1:]:
        stats.add(prof)
    stats.dump_stats(f"{path}.items")


STEPS = {
    "stats": step_stats,
    "import": step_import,
    "upload": step_upload,
    "evaluate": step_evaluate,
    "batch": step_batch,
}


def child(step: str, n: int, tmp: Path) -> None:
    out = STEPS[step](n, tmp)
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    out.setdefault("cpu_s", me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime)
    out["process_cpu_s"] = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    out["peak_mb"] = max(me.ru_maxrss, kids.ru_maxrss) / 1024  # Linux: KiB
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,50000,100000")
    ap.add_argument("--steps", default="stats,import,evaluate,batch")
    ap.add_argument("--batch-size", type=int, default=2000, help="the batch step's largest size")
    ap.add_argument("--evaluate-size", type=int, default=10000, help="the evaluate step's largest size")
    ap.add_argument("--latency", default="0.05", help="the batch step's server latencies in seconds, comma-separated")
    ap.add_argument("--in-flight", type=int, default=64, help="the batch step's requests in flight")
    ap.add_argument("--child", nargs=3, metavar=("STEP", "N", "TMP"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), Path(args.child[2]))
        return
    began, rows = start(), []
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| step | items | CPU s | peak MB | other |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for n in (int(s) for s in args.sizes.split(",")):
            write_file(tmp / f"pairs-{n}.jsonl", n)
            runs = [(step, lat) for step in args.steps.split(",")
                    for lat in (args.latency.split(",") if step == "batch" else [""])]  # fmt: skip
            for step, lat in runs:
                if (step == "batch" and n > args.batch_size) or (step == "evaluate" and n > args.evaluate_size):
                    continue
                env = os.environ | {"SCALE_LATENCY": lat or "0.05", "SCALE_IN_FLIGHT": str(args.in_flight)}
                res = subprocess.run([sys.executable, __file__, "--child", step, str(n), str(tmp)],
                                     capture_output=True, text=True, cwd=ROOT, env=env)  # fmt: skip
                if res.returncode:
                    print(f"| {step} | {n:,} | failed: {res.stderr.strip().splitlines()[-1:]} | | |")
                    continue
                r = json.loads(res.stdout.strip().splitlines()[-1])
                other = {k: round(v, 3) for k, v in r.items() if k not in ("cpu_s", "peak_mb", "process_cpu_s")}
                extra = ", ".join(f"{k} {v}" for k, v in other.items())
                if step == "evaluate":
                    extra = f"{r['cpu_s'] / n * 1000:.2f} ms a document"
                print(f"| {step} | {n:,} | {r['cpu_s']:.2f} | {r['peak_mb']:.0f} | {extra} |", flush=True)
                label = f"{step} at {float(lat) * 1000:.0f} ms" if step == "batch" else step
                rows.append({"step": label, "items": n, "CPU s": r["cpu_s"], "peak MB": r["peak_mb"], "other": extra})
            (tmp / f"pairs-{n}.jsonl").unlink()
    plots = [
        {"table": "by step and items", "x": "items", "y": [y], "group": "step", "title": f"{y} against items"}
        for y in ("CPU s", "peak MB")
    ]
    record("scale", "scale", {"by step and items": rows}, started=began, plot=plots)


if __name__ == "__main__":
    main()
