"""Figures for dataset import.

1. The QAGS-CNN file from ../shared (when present): items, sentences, share consistent, read and save time.
2. A synthetic generic JSONL of 10,000 items (2,000 distinct articles, 3-sentence summaries): read time
   (dominated by splitting candidates with pysbd), save time (bulk insert, one transaction), and the time
   to find it already imported.

Run: .venv/bin/python bench/datasets_import.py
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from record import record, start

from db.engine import make_engine
from services import datasets
from services.config import PROJECT_ROOT

QAGS = PROJECT_ROOT.parent / "shared" / "data" / "qags_cnndm_mturk.jsonl"


def synthetic(n: int = 10_000, n_articles: int = 2_000) -> bytes:
    rng = random.Random(0)
    articles = [f"Article {a}. " + "The council met on Tuesday to discuss the budget. " * 30 for a in range(n_articles)]
    rows = [
        {
            "id": f"x{i}",
            "article": articles[i % n_articles],
            "summary": f"The council met on day {i}. It discussed a budget of {i} dollars. Mr. Smith agreed.",
            "label": rng.choice(["yes", "no"]),
            "score": round(rng.random(), 3),
        }
        for i in range(n)
    ]
    return "\n".join(json.dumps(r) for r in rows).encode()


def main() -> None:
    began, figures = start(), {}
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/bench.db")
        if QAGS.is_file():
            data = QAGS.read_bytes()
            t = time.perf_counter()
            result = datasets.read_qags(data)
            t_read = time.perf_counter() - t
            t = time.perf_counter()
            saved = datasets.save_dataset(engine, name="QAGS-CNN", data=data, result=result)
            t_save = time.perf_counter() - t
            s = datasets.dataset_stats(engine, saved.id)
            print(f"QAGS-CNN: {s['items']} items, {s['sentences']} sentences, rejected {s['rejected']}")
            print(f"  items consistent by majority (every sentence): {s['share_consistent']:.3f}")
            print(f"  sentences consistent by majority: {s['sentence_share_consistent']:.3f}")
            print(f"  mean human score: {s['score_mean']:.3f}")
            print(f"  read {t_read:.3f} s, save {t_save:.3f} s")
            figures |= {
                "QAGS-CNN items": s["items"],
                "QAGS-CNN sentences": s["sentences"],
                "QAGS-CNN items consistent by majority": s["share_consistent"],
                "QAGS-CNN read s": t_read,
                "QAGS-CNN save s": t_save,
            }
        else:
            print(f"QAGS-CNN: {QAGS} absent, skipped")

        data = synthetic()
        mapping = datasets.ColumnMapping(**datasets.default_mapping(datasets.sniff_columns(data, "jsonl")))
        t = time.perf_counter()
        result = datasets.read_table(data, "jsonl", mapping)
        t_read = time.perf_counter() - t
        t = time.perf_counter()
        saved = datasets.save_dataset(engine, name="synthetic", data=data, result=result)
        t_save = time.perf_counter() - t
        t = time.perf_counter()
        again, _ = datasets.import_file(engine, name="synthetic", data=data, fmt="jsonl", mapping=mapping)
        t_again = time.perf_counter() - t
        print(f"synthetic: {len(result.items):,} items, {len(data) / 1e6:.1f} MB")
        print(f"  read {t_read:.2f} s (pysbd split), save {t_save:.2f} s, already imported: {t_again:.3f} s")
        assert saved.created and not again.created
        figures |= {
            f"synthetic JSONL of {len(result.items):,} items: read s": t_read,
            "synthetic: save s": t_save,
            "synthetic: found already imported s": t_again,
        }
        record("datasets", "datasets_import", figures, started=began)
        engine.dispose()


if __name__ == "__main__":
    main()
