"""Batch throughput against a local OpenAI-compatible server with a fixed 200 ms latency.

500 documents, at most 64 requests in flight; prints wall time over the ideal (calls x 0.2 s / 64)
for both converters, and calls per document. Run: .venv/bin/python bench/batch_throughput.py [N]
"""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from record import record, start  # noqa: E402
from sqlmodel import Session  # noqa: E402

from db.engine import make_engine  # noqa: E402
from db.models import Dataset, DatasetItem, Document  # noqa: E402
from services import dcr  # noqa: E402
from services.config import BackendConfig  # noqa: E402
from services.jobs import batches  # noqa: E402

LATENCY, IN_FLIGHT, REPEATS = 0.2, 64, 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def article(i: int) -> str:
    return f"Article {i}. " + "The council met on Tuesday. " * 60


def summary_sentences(i: int) -> list[str]:
    return [f"Summary {i} sentence {j} says the council met." for j in range(4)]


def start_server(
    port: int, latency: float = LATENCY, first_request_file: str | None = None, nice: int = 0
) -> subprocess.Popen:
    """The fixed-latency server on `port`, ready to answer; at a lower priority (`nice -n`) when `nice` is given."""
    extra = [first_request_file] if first_request_file else []
    prefix = ["nice", "-n", str(nice)] if nice else []
    server = subprocess.Popen(
        [*prefix, sys.executable, str(ROOT / "bench" / "latency_server.py"), str(port), str(latency), *extra]
    )
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    return server


def make_dataset(engine, n: int) -> int:
    with Session(engine) as session:
        ds = Dataset(name=f"synthetic-{n}", format="jsonl", sha256=f"bench-{n}", n_items=n)
        session.add(ds)
        session.flush()
        for i in range(n):
            doc = Document(sha256=f"bench-doc-{i:06d}", text=article(i))
            session.add(doc)
            session.flush()
            sentences = summary_sentences(i)
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


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    port = free_port()
    server = start_server(port)
    try:
        backend = BackendConfig(
            kind="openai",
            base_url=f"http://127.0.0.1:{port}/v1",
            model="latency-model",
            concurrency=IN_FLIGHT,
            max_retries=0,
            timeout=30,
        )
        began, figures = start(), {}
        print(f"{n} documents, 4 sentences each; server latency {LATENCY * 1000:.0f} ms; {IN_FLIGHT} in flight")
        with tempfile.TemporaryDirectory() as tmp:
            for amc in ("rule", "llm"):
                ratios = []
                for attempt in range(REPEATS):
                    engine = make_engine(f"sqlite:///{tmp}/bench-{amc}-{attempt}.db")
                    ds = make_dataset(engine, n)
                    bid = batches.create_batch(
                        engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(amc=amc), concurrency=IN_FLIGHT
                    )
                    t = time.perf_counter()
                    batches.process_batch(engine, bid, backend=backend)
                    wall = time.perf_counter() - t
                    p = batches.progress(engine, bid)
                    assert p is not None and p.done == n, p
                    ideal = p.calls * LATENCY / IN_FLIGHT
                    ratios.append(wall / ideal)
                    print(
                        f"converter {amc:4}: {p.calls} calls ({p.calls / n:.1f} per document), wall {wall:.2f} s, "
                        f"ideal {ideal:.2f} s, ratio {wall / ideal:.3f}"
                    )
                    if attempt == REPEATS - 1:
                        t = time.perf_counter()
                        bid2 = batches.create_batch(
                            engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(amc=amc), concurrency=IN_FLIGHT
                        )
                        batches.process_batch(engine, bid2, backend=backend)
                        p2 = batches.progress(engine, bid2)
                        figures[f"converter {amc}: calls a document"] = p.calls / n
                        figures[f"converter {amc}: same batch again, calls"] = p2.calls
                        print(
                            f"  same batch again: {p2.calls} calls, {p2.cache_hits} cache hits, "
                            f"{time.perf_counter() - t:.2f} s"
                        )
                    engine.dispose()
                print(f"converter {amc}: median ratio {statistics.median(ratios):.3f} over {REPEATS} runs")
                figures[f"converter {amc}: wall over the ideal, median of {REPEATS}"] = statistics.median(ratios)
        record("batches", "batch_throughput", figures, started=began)
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
