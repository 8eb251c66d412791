"""Figures for ConsEval.

1. Time of Krippendorff's alpha on 1,000 units x 5 raters at each level: the point value alone, and with
   the 1,000-resample bootstrap interval (services.stats.krippendorff_alpha).
2. Wall time and model calls of a full self- and inter-consistency study on 20 items with the EMBEDDED model
   (4 bundled items per criterion), on a fresh database; then the same study again (every answer cached).

Run: nice -n 10 .venv/bin/python bench/conseval_alpha.py --samples 2 --no-greedy   (or --skip-study for 1. only)
The study stated in the README: 2 samples, no greedy answer, the short definitions, the 7 scales (all four IC
cases): 280 answers. With the greedy answer too (drop --no-greedy: 420 answers) it took 18 minutes here on
2 cores shared with other work.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from record import record, start

from db.engine import make_engine
from services import conseval as ce
from services import stats
from services.config import BackendConfig


def bench_alpha(repeats: int = 3) -> list[dict]:
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 6, size=1000)
    data = np.clip(truth[None, :] + rng.integers(-1, 2, size=(5, 1000)), 1, 5).astype(float)
    data[rng.random(data.shape) < 0.05] = np.nan  # 5% missing
    print("alpha on 1,000 units x 5 raters (values 1-5, 5% missing); best of", repeats)
    rows = []
    for level in stats.LEVELS:
        times = {}
        for n_boot in (0, 1000):
            best = float("inf")
            for _ in range(repeats):
                t = time.perf_counter()
                res = stats.krippendorff_alpha(data, level, n_boot=n_boot, seed=0)
                best = min(best, time.perf_counter() - t)
            times[n_boot] = best
        ci = f"[{res.ci_low:.3f}, {res.ci_high:.3f}]"
        print(
            f"  {level:8} alpha {res.alpha:.3f} {ci}: point {times[0] * 1000:.1f} ms, "
            f"with 1,000 bootstrap resamples {times[1000] * 1000:.0f} ms"
        )
        rows.append(
            {"level": level, "alpha": res.alpha, "point ms": times[0] * 1000, "1,000 resamples ms": times[1000] * 1000}
        )
    return rows


def bench_study(samples: int, definitions: list[str], scales: list[str], per_criterion: int, greedy: bool) -> dict:
    from services.embedded import get_embedded_server

    backend = BackendConfig(kind="embedded", concurrency=2)
    t = time.perf_counter()
    get_embedded_server().ensure_started()
    print(f"embedded server start: {time.perf_counter() - t:.1f} s (not counted below)")
    cfg = ce.StudyConfig(
        criteria=list(ce.CRITERIA),
        scales=scales,
        granularities=definitions,
        models=[ce.ModelSpec.of(backend)],
        n_samples=samples,
        greedy=greedy,
        n_boot=1000,
        concurrency=2,
    )
    items = ce.sample_items(cfg.criteria, per_criterion)
    print(
        f"study: {len(items)} items ({per_criterion} per criterion) x {len(definitions)} definition(s) "
        f"({', '.join(definitions)}) x {len(scales)} scales x ({samples} samples{' + greedy' if greedy else ''}), "
        f"max_tokens "
        f"{cfg.max_tokens}, 2 in flight"
    )
    figures: dict = {"study items": len(items)}
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/bench.db")
        for label in ("cold", "again (cached)"):
            sid = ce.create_study(engine, cfg, items)
            t = time.perf_counter()
            st = ce.run_study(engine, sid, backends={cfg.models[0].label: backend})
            wall = time.perf_counter() - t
            miss = st.results["missing"] if st.results else {}
            print(
                f"  {label}: {st.status} in {wall:.1f} s · {st.n_done} answers · {st.calls} calls · "
                f"{st.cache_hits} cache hits · {miss.get('missing', '?')} unreadable/off-scale"
            )
            figures |= {
                f"study {label}: wall s": wall,
                f"study {label}: calls": st.calls,
                f"study {label}: answers": st.n_done,
            }
        df = ce.results_frame(st.results)
        for kind in ("SC", "IC1", "IC2", "IC3", "IC4", "GS"):
            d = df[(df.kind == kind) & (df["mode"].isin(["greedy", "sampled"]))]
            defined = d.value.notna().sum()
            mean = d.value.mean()
            print(
                f"  {kind}: {defined} of {len(d)} alphas defined; mean {mean:.3f}"
                if defined
                else f"  {kind}: 0 of {len(d)} alphas defined ({d.note.dropna().iloc[0] if len(d) else ''})"
            )
        reasons = df[df.value.isna()].note.dropna().str.slice(0, 60).value_counts().head(3)
        for note, n in reasons.items():
            print(f"    undefined x{n}: {note}...")
    get_embedded_server().stop()
    return figures


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=3)
    p.add_argument("--definitions", default="short")
    p.add_argument("--scales", default=",".join(ce.SCALES))
    p.add_argument("--per-criterion", type=int, default=4)
    p.add_argument("--no-greedy", action="store_true", help="no greedy answer (no GS row): fewer calls")
    p.add_argument("--skip-study", action="store_true")
    args = p.parse_args()
    began = start()
    figures: dict = {"alpha on 1,000 units x 5 raters, best of 3": bench_alpha()}
    if not args.skip_study:
        figures |= bench_study(
            args.samples, args.definitions.split(","), args.scales.split(","), args.per_criterion, not args.no_greedy
        )
    record("conseval", "conseval_alpha", figures, started=began)


if __name__ == "__main__":
    main()
