"""Render time of the Meta-evaluation and History pages on a large database (server side, AppTest).

Seeds a temporary SQLite file with bulk inserts:
  * a dataset of 10,000 items (10,000 reference documents, 5-sentence summaries, 3 worker votes per sentence
    from a pool of 300 workers, human score and label from the majorities);
  * a finished batch over it: 10,000 items with 5 sentence verdicts each at round 0 (50,000 verdicts, with
    reasons), and one RAI round for the items found inconsistent (as a batch with rounds = 1 stores them);
  * 10,000 evaluation runs for the History page: 10,000 rounds and 50,000 sentence rows.
Then times AppTest renders of the Meta-evaluation page (?batch=ID) and the History page: the first render
(cold caches) and a second one (a new session, warm caches), and the first opening of each tab of the
Meta-evaluation page (tabs render lazily; Sentence level reads the verdicts).

Run: .venv/bin/python bench/pages_render.py [N_ITEMS]  (figures on stdout; AppTest's "bare mode" warnings on stderr)
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from record import record, start  # noqa: E402

TMP = tempfile.mkdtemp(prefix="cs-bench-")
os.environ["DATABASE_URL"] = f"sqlite:///{TMP}/bench.db"
os.environ["CONSISTENCY_SPAWN_WORKER"] = "0"
os.environ["DATA_DIR"] = TMP

from sqlalchemy import Connection, insert, select  # noqa: E402

from db.models import (  # noqa: E402
    Batch,
    BatchItem,
    Dataset,
    DatasetItem,
    Document,
    EvalRound,
    Run,
    SentenceRow,
    utcnow,
)
from services import result_columns  # noqa: E402
from services.database import get_engine  # noqa: E402

N_SENT = 5
WORKERS = [f"W{w:03d}" for w in range(300)]
OK = "This sentence is consistent with the article: the council approved the budget on Tuesday, as reported."
BAD = "This sentence is not consistent with the article: the article gives a different amount for the budget."


def chunks(rows: list[dict], size: int = 5000):
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


def seed_documents(conn: Connection, n: int, now: datetime) -> None:
    """n reference articles (ids 1..n) and n candidate summaries (ids n+1..2n)."""
    article = " ".join(f"Sentence {k} of the article says the council met and approved a budget." for k in range(25))
    conn.execute(
        insert(Document),
        [
            {"sha256": f"ref-{i:06d}", "text": (t := f"Article {i}. {article}"), "n_chars": len(t), "created_at": now}
            for i in range(n)
        ],
    )
    conn.execute(
        insert(Document),
        [
            {
                "sha256": f"cand-{i:06d}",
                "text": (t := f"Summary {i}. The council met. It approved a budget."),
                "n_chars": len(t),
                "created_at": now,
            }
            for i in range(n)
        ],
    )


def seed_dataset(
    conn: Connection, n: int, now: datetime, rng: random.Random
) -> tuple[int, list[dict], list[list[bool]]]:
    """A QAGS-like dataset of n items with worker votes per sentence; returns its id, item rows and true labels."""
    ds_id = conn.execute(
        insert(Dataset).values(
            name="synthetic QAGS-like",
            format="qags",
            task="summarization",
            sha256="bench",
            label_kinds=["score", "binary", "sentence"],
            meta={},
            n_items=n,
            n_rejected=0,
            rejected=[],
            created_at=now,
        )
    ).inserted_primary_key[0]
    items, truth = [], []
    for i in range(n):
        sentences = [
            f"Summary {i}, sentence {j}: the council approved {rng.randint(1, 99)} million." for j in range(N_SENT)
        ]
        ok = [rng.random() < 0.8 for _ in range(N_SENT)]
        labels = []
        for j in range(N_SENT):
            voters = rng.sample(WORKERS, 3)
            labels.append({w: int(ok[j] if rng.random() < 0.85 else not ok[j]) for w in voters})
        maj = [int(sum(v.values()) >= 2) for v in labels]
        truth.append(ok)
        items.append(
            {
                "dataset_id": ds_id,
                "idx": i,
                "external_id": str(i),
                "reference_id": i + 1,
                "candidate": " ".join(sentences),
                "sentences": sentences,
                "human_score": sum(maj) / N_SENT,
                "human_label": int(all(maj)),
                "sentence_labels": labels,
                "extra": {},
            }
        )
    for c in chunks(items, 2000):
        conn.execute(insert(DatasetItem), c)
    return ds_id, items, truth


def batch_round(r: int, said: list[bool], item: dict) -> dict:
    """One round of a batch item's result: the sentence verdicts the evaluator gave."""
    marks = [1 if s else -1 for s in said]
    return {
        "round": r,
        "candidate": item["candidate"],
        "score": (sum(marks) / len(marks) + 1) / 2,
        "k": N_SENT,
        "alpha": 0.0,
        "beta": 0.0,
        "n_unknown": 0,
        "error": None,
        "model_is_consistent": all(said) if r == 0 else None,
        "sentences": [
            {
                "index": j,
                "text": item["sentences"][j],
                "verdict": "consistent" if s else "inconsistent",
                "reason": OK if s else BAD,
                "mark": 1 if s else -1,
                "rule_mark": 1 if s else -1,
                "error": None,
            }
            for j, s in enumerate(said)
        ],
        "extras": [],
        "rewrites": [],
        "improve_error": None,
    }


def seed_batch(
    conn: Connection, ds_id: int, items: list[dict], truth: list[list[bool]], now: datetime, rng: random.Random
) -> tuple[int, int]:
    """A finished batch over the dataset (round 0, and an RAI round for inconsistent items); returns its id and
    the number of sentence verdicts."""
    n = len(items)
    batch_id = conn.execute(
        insert(Batch).values(
            name="bench batch",
            dataset_id=ds_id,
            task="summarization",
            criteria="",
            method="dce-amc",
            amc="rule",
            max_rounds=1,
            concurrency=8,
            backend_kind="openai",
            model="gpt-bench",
            base_url="http://127.0.0.1:9/v1",
            params={"temperature": 0.0},
            prompt_versions={"evaluator": "dce-summarization@1", "improver": "rai@1", "converter": "rule@1"},
            status="done",
            n_items=n,
            created_at=now,
            started_at=now,
            finished_at=now,
        )
    ).inserted_primary_key[0]
    rows, verdicts = [], 0
    for i in range(n):
        said = [t if rng.random() < 0.8 else not t for t in truth[i]]
        score = sum(said) / N_SENT
        rounds = [batch_round(0, said, items[i])]
        if score < 1:
            rounds.append(batch_round(1, [s or rng.random() < 0.85 for s in said], items[i]))
        verdicts += N_SENT * len(rounds)
        rows.append(
            {
                "batch_id": batch_id,
                "item_id": i + 1,
                "status": "done",
                "worker": "bench",
                "attempts": 1,
                "score": rounds[0]["score"],
                "final_score": rounds[-1]["score"],
                "n_sentences": N_SENT,
                "n_unknown": 0,
                "n_rounds": len(rounds),
                "calls": len(rounds) * 2,
                "cache_hits": 0,
                "prompt_tokens": 900,
                "completion_tokens": 300,
                "latency_ms": 800.0,
                "result": (result := {"rounds": rounds, "final_candidate": rounds[-1]["candidate"]}),
                **result_columns.columns(result),  # as the batch worker writes them
                "updated_at": now,
            }
        )
    for c in chunks(rows, 2000):
        conn.execute(insert(BatchItem), c)
    return batch_id, verdicts


def seed_history(conn: Connection, n: int, now: datetime) -> None:
    """The History page's runs: n runs with one round and five sentence rows each."""
    run_rows = [
        {
            "title": f"run {i}",
            "source": "cli",
            "task": "summarization",
            "criteria": "",
            "method": "dce-amc",
            "amc": "rule",
            "max_rounds": 0,
            "backend_kind": "openai",
            "model": "gpt-bench",
            "base_url": None,
            "params": {},
            "prompt_versions": {},
            "reference_id": i + 1,
            "candidate_id": n + i + 1,
            "status": "done",
            "initial_score": 0.8,
            "final_score": 0.8,
            "n_rounds": 1,
            "created_at": now,
            "updated_at": now,
        }
        for i in range(n)
    ]
    for c in chunks(run_rows):
        conn.execute(insert(Run), c)
    round_rows = [
        {
            "run_id": i + 1,
            "idx": 0,
            "text": "Summary.",
            "k": N_SENT,
            "alpha": 0.0,
            "beta": 0.0,
            "z": 0.6,
            "z_hat": 0.8,
            "n_judged": N_SENT,
            "n_unknown": 0,
            "model_is_consistent": False,
            "notes": [],
            "extras": [],
            "created_at": now,
        }
        for i in range(n)
    ]
    for c in chunks(round_rows):
        conn.execute(insert(EvalRound), c)
    sentence_rows = [
        {
            "round_id": i + 1,
            "idx": j,
            "text": f"Sentence {j}.",
            "verdict": "consistent",
            "reason": OK,
            "mark": 1,
            "rule_mark": 1,
        }
        for i in range(n)
        for j in range(N_SENT)
    ]
    for c in chunks(sentence_rows):
        conn.execute(insert(SentenceRow), c)


def seed(n: int) -> tuple[int, dict[str, int]]:
    """Seed documents, a dataset, a batch over it and the History runs; returns the batch id and the counts."""
    rng = random.Random(0)
    now = utcnow()
    with get_engine().begin() as conn:
        seed_documents(conn, n, now)
        ds_id, items, truth = seed_dataset(conn, n, now, rng)
        batch_id, verdicts = seed_batch(conn, ds_id, items, truth, now, rng)
        seed_history(conn, n, now)
    counts = {"items": n, "documents": 2 * n, "batch verdicts": verdicts, "runs": n, "history verdicts": n * N_SENT}
    return batch_id, counts


def render(page: str | None, query: dict[str, str] | None = None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    if query:
        at.query_params.update(query)
    if page:
        at.switch_page(page)
    t = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - t
    assert not at.exception, [e.value for e in at.exception]
    return elapsed, at


def warm_up() -> None:
    """What a server does once per process (imports of pandas, scipy, plotly, nltk; the engine): render the
    pages once on a 20-item batch of its own, so the timings below are about the data."""
    engine = get_engine()
    with engine.begin() as conn:
        ds = conn.execute(
            insert(Dataset).values(
                name="warm-up",
                format="jsonl",
                task="summarization",
                sha256="warm",
                n_items=1,
                n_rejected=0,
                label_kinds=[],
                meta={},
                rejected=[],
                created_at=utcnow(),
            )
        ).inserted_primary_key[0]
        conn.execute(
            insert(DatasetItem),
            [
                {
                    "dataset_id": ds,
                    "idx": 0,
                    "external_id": "w",
                    "reference_id": 1,
                    "candidate": "A.",
                    "sentences": ["A."],
                    "human_score": 1.0,
                    "human_label": 1,
                    "extra": {},
                }
            ],
        )
        item = conn.execute(select(DatasetItem.id).where(DatasetItem.dataset_id == ds)).scalar_one()
        bid = conn.execute(
            insert(Batch).values(
                name="warm-up",
                dataset_id=ds,
                status="done",
                n_items=1,
                max_rounds=0,
                params={},
                prompt_versions={},
                created_at=utcnow(),
            )
        ).inserted_primary_key[0]
        result = {
            "rounds": [
                {
                    "round": 0,
                    "score": 1.0,
                    "model_is_consistent": True,
                    "sentences": [{"index": 0, "text": "A.", "verdict": "consistent"}],
                }
            ]
        }
        conn.execute(
            insert(BatchItem),
            [
                {
                    "batch_id": bid,
                    "item_id": item,
                    "status": "done",
                    "score": 1.0,
                    "final_score": 1.0,
                    "n_rounds": 1,
                    "result": result,
                    "updated_at": utcnow(),
                }
            ],
        )
    t = time.perf_counter()
    render(None)
    render("pages/6_Meta-evaluation.py", {"batch": str(bid)})
    render("pages/2_History.py")
    print(f"warm-up (imports, first plotly figures, engine): {time.perf_counter() - t:.1f} s")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    began, figures = start(), {}
    t = time.perf_counter()
    batch_id, counts = seed(n)
    print(f"seeded {', '.join(f'{v:,} {k}' for k, v in counts.items())} in {time.perf_counter() - t:.1f} s")
    warm_up()
    query = {"batch": str(batch_id)}
    first, _ = render("pages/6_Meta-evaluation.py", query)
    second, at = render("pages/6_Meta-evaluation.py", query)
    print(
        f"Meta-evaluation (?batch={batch_id}): first render {first:.3f} s (nothing cached), "
        f"second render {second:.3f} s (a new session)"
    )
    figures |= {f"Meta-evaluation, {n:,} items: first render s": first, "Meta-evaluation: second render s": second}
    from components import background

    pending = [t for t in background._registry().tasks.values() if not t.future.done()]
    if pending:
        t = time.perf_counter()
        for task in pending:
            background.wait(task, 600)
        print(
            f"  bootstrap intervals (1,000 resamples) finished in the background after {time.perf_counter() - t:.1f}"
            " s more"
        )
        third, at = render("pages/6_Meta-evaluation.py", query)
        print(f"  render with the intervals in: {third:.3f} s")
    # Tabs render lazily: the sentence-level and agreement tabs are the ones that read the 50,000 verdicts.
    for name in ("Sentence level", "Human agreement", "Figure 3", "Baselines", "RAI", "Export"):
        t_tab, _ = render("pages/6_Meta-evaluation.py", {**query, "me_tab": name})
        print(f"  tab {name!r} (deep link, first open): {t_tab:.3f} s")
        figures[f"Meta-evaluation tab {name}, first open s"] = t_tab
    first, _ = render("pages/2_History.py")
    second, _ = render("pages/2_History.py")
    print(f"History ({n:,} runs): first render {first:.3f} s, second render {second:.3f} s")
    figures |= {f"History, {n:,} runs: first render s": first, "History: second render s": second}
    record("pages", "pages_render", figures, started=began)


if __name__ == "__main__":
    main()
