"""The evidence checker's judge card on QAGS-CNN: PPI against the classical interval with 50 labels.

    .venv/bin/python bench/judges_qags.py [--draws 1000] [--labelled 50] [--alpha 0.05]

Imports ../shared/data/qags_cnndm_mturk.jsonl into a temporary database, runs the offline evidence checker
over every summary as a batch, then draws `labelled` items at random `draws` times: each draw keeps their
human labels, hides the rest, and computes the classical and the PPI interval of the consistency rate. Prints
how often each covers the rate of all human labels, and their mean widths. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from record import record, start  # noqa: E402

from db.engine import make_engine  # noqa: E402
from services import datasets, judges  # noqa: E402
from services.config import BackendConfig  # noqa: E402
from services.dcr import DCRConfig  # noqa: E402
from services.jobs import batches  # noqa: E402

QAGS = ROOT.parent / "shared" / "data" / "qags_cnndm_mturk.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--labelled", type=int, default=50)
    ap.add_argument("--alpha", type=float, default=0.05)
    a = ap.parse_args()
    began = start()
    with tempfile.TemporaryDirectory() as tmp:
        eng = make_engine(f"sqlite:///{tmp}/bench.db")
        saved, _ = datasets.import_file(eng, name="QAGS-CNN", data=QAGS.read_bytes(), fmt="qags")
        backend = BackendConfig(kind="openai", base_url="http://127.0.0.1:9/v1", model="none")
        bid = batches.create_batch(
            eng, dataset_id=saved.id, backend=backend, cfg=DCRConfig(method="evidence", max_rounds=0)
        )
        t = time.perf_counter()
        batches.process_batch(eng, bid, backend=backend)
        checker_s = time.perf_counter() - t
        print(f"evidence checker over the QAGS-CNN summaries in {checker_s:.1f} s")
        batch = judges.data.batches(eng, [bid])[0]
        frame = judges.judge_frame(eng, batch)
        human = judges.human_frame(eng, saved.id)
        card = judges.card_from_frames(batch, frame, judges.human_frame(eng, saved.id, budget=a.labelled, seed=0))
        eng.dispose()
    df = human.merge(frame, on="item_id")
    y_all = df["label"].to_numpy(float)
    pred = df["prediction"].to_numpy(float)
    yhat = np.where(np.isfinite(pred), pred, judges.card.NEUTRAL)
    truth = float(y_all.mean())
    r = card.rates
    print(
        f"card with {card.n_labelled} labels (seed 0): judge rate {r.judge_rate:.3f}; classical "
        f"{r.classical.estimate:.3f} [{r.classical.ci_low:.3f}, {r.classical.ci_high:.3f}] width "
        f"{r.classical.width:.3f}; PPI {r.ppi.estimate:.3f} "
        f"[{r.ppi.ci_low:.3f}, {r.ppi.ci_high:.3f}] width {r.ppi.width:.3f} (lambda {r.ppi.lam}); AUROC "
        f"{card.agreement.auroc.value:.3f}, balanced accuracy {card.agreement.balanced_accuracy.value:.3f}, "
        f"kappa {card.agreement.kappa.value:.3f}"
    )
    cover_p = cover_c = 0
    wp, wc = [], []
    rng = np.random.default_rng(0)
    for _ in range(a.draws):
        lab = np.zeros(y_all.size, bool)
        lab[rng.choice(y_all.size, a.labelled, replace=False)] = True
        p = judges.ppi(y_all[lab], yhat[lab], yhat[~lab], alpha=a.alpha)
        c = judges.classical(y_all[lab], alpha=a.alpha)
        cover_p += p.ci_low <= truth <= p.ci_high
        cover_c += c.ci_low <= truth <= c.ci_high
        wp.append(p.width)
        wc.append(c.width)
    print(
        f"{a.draws} draws of {a.labelled} labels of {y_all.size}; rate of all labels {truth:.4f}: coverage PPI "
        f"{cover_p / a.draws:.3f}, classical {cover_c / a.draws:.3f}; mean width PPI {np.mean(wp):.4f}, classical "
        f"{np.mean(wc):.4f} (ratio {np.mean(wp) / np.mean(wc):.3f}); PPI narrower in "
        f"{np.mean(np.array(wp) < np.array(wc)):.1%} of draws"
    )
    figures = {
        "summaries": int(y_all.size),
        "rate of all human labels": truth,
        f"card with {card.n_labelled} labels: judge rate": r.judge_rate,
        "card: classical interval": f"{r.classical.estimate:.3f} [{r.classical.ci_low:.3f}, {r.classical.ci_high:.3f}]",
        "card: PPI interval": f"{r.ppi.estimate:.3f} [{r.ppi.ci_low:.3f}, {r.ppi.ci_high:.3f}]",
        "card: AUROC": card.agreement.auroc.value,
        "card: balanced accuracy": card.agreement.balanced_accuracy.value,
        f"{a.draws} draws of {a.labelled} labels: PPI coverage": cover_p / a.draws,
        f"{a.draws} draws of {a.labelled} labels: classical coverage": cover_c / a.draws,
        "mean width PPI / classical": float(np.mean(wp) / np.mean(wc)),
        "evidence checker over the summaries (wall s)": checker_s,
    }
    record("judges", "judges_qags", figures, started=began)


if __name__ == "__main__":
    main()
