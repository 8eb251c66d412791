"""The meta-evaluation figures of the DCR paper on QAGS-CNN/DM with the offline evidence checker (no model).

Imports ../shared/data/qags_cnndm_mturk.jsonl (never committed) into a fresh database, runs a batch with the
`evidence` method, and prints Figure 3 (precision, recall, F1), the summary-level correlations (pooled, and
per document where documents have several summaries), the sentence-level classification, and Table 4 /
Figure 4 (the evidence checker does not rewrite, so they show no correction).

`--method dce-amc --rounds 2 --limit 12` runs DCE + AMC and RAI on the embedded demo model instead (slow on a
shared CPU; the demo model's verdicts are near chance, so the figures show how the definitions count).

Run: .venv/bin/python bench/metaeval_qags.py [--limit N] [--method evidence|dce-amc] [--rounds M]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from record import record, start
from sqlalchemy import select

from db.engine import make_engine
from db.models import BatchItem
from services import datasets, dcr, metaeval
from services.config import BackendConfig
from services.jobs import batches

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "qags_cnndm_mturk.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--method", default="evidence", choices=["evidence", "dce-amc"])
    ap.add_argument("--rounds", type=int, default=0)
    args = ap.parse_args()
    began = start()
    raw = Path(args.data).read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/qags.db")
        ds = datasets.save_dataset(engine, name="qags-cnn", data=raw, result=datasets.read_dataset(raw, "qags")).id
        bid = batches.create_batch(
            engine,
            dataset_id=ds,
            backend=BackendConfig(kind="embedded"),
            cfg=dcr.DCRConfig(method=args.method, max_rounds=args.rounds),
            item_limit=args.limit or None,
        )
        t = time.perf_counter()
        batches.process_batch(engine, bid)
        batch_s = time.perf_counter() - t
        print(f"{args.method} batch over QAGS-CNN: {batch_s:.1f} s")
        data = metaeval.load_batch(engine, bid)
        items = data.items
        print(
            f"items: {len(items)}, done: {int((items['status'] == 'done').sum())}, "
            f"failed: {int((items['status'] == 'failed').sum())}"
        )
        sentence_errors = Counter()
        with engine.connect() as conn:
            for (result,) in conn.execute(select(BatchItem.result).where(BatchItem.batch_id == bid)):
                for s in ((result or {}).get("rounds") or [{}])[0].get("sentences") or []:
                    if s.get("verdict") == "unknown":
                        sentence_errors[str(s.get("error") or "")[:70]] += 1
        for msg, n in sentence_errors.most_common(6):
            print(f"  unknown sentences: {n} × {msg}")
        f3 = metaeval.figure3(data=data).frame
        print("Figure 3:")
        print(f3[["evaluator", "n", "tp", "fp", "fn", "tn", "precision", "recall", "f1"]].to_string(index=False))
        corr = metaeval.correlations(data.done, n_boot=0)
        print("Correlations:")
        print(corr.frame()[["statistic", "n", "value", "note"]].to_string(index=False))
        sl = metaeval.sentence_level(data=data)
        c = sl.classification
        if c is not None:
            f = {
                k: "n/a" if v is None else f"{v:.3f}"
                for k, v in {"P": c.precision, "R": c.recall, "F1": c.f1, "BA": c.balanced_accuracy}.items()
            }
            print(
                f"Sentence level: n={c.n} tp={c.tp} fp={c.fp} fn={c.fn} tn={c.tn} "
                + " ".join(f"{k}={v}" for k, v in f.items())
            )
            print(f"  (unknown verdicts left out: {sl.n_unknown})")
        print("Table 4:")
        print(metaeval.rai_table(items).to_string(index=False))
        print("Figure 4:")
        print(metaeval.rounds_of(items).share.to_string(index=False))
        figures: dict = {f"{args.method} batch over QAGS-CNN (wall s)": batch_s, "items": len(items)}
        figures["Figure 3"] = f3[["evaluator", "n", "precision", "recall", "f1"]].to_dict("records")
        figures["correlations"] = corr.frame()[["statistic", "n", "value"]].to_dict("records")
        if c is not None:
            figures |= {"sentence level: balanced accuracy": c.balanced_accuracy, "sentence level: F1": c.f1}
        record("metaeval", "metaeval_qags", figures, started=began)


if __name__ == "__main__":
    main()
