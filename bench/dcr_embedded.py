"""Figures for the DCR loop on the embedded model.

1. Wall time of DCE + AMC on a 4-sentence summary of a ~400-word article (the bundled harbour-bridge
   sample), with the rule converter and with the LLM converter, on a fresh database (cold cache).
2. The model calls made when the same evaluation runs a second time (the cache: target 0).
3. How often the rule and LLM converters agree on the bundled samples' reasons.
4. The model's speed measured on this machine now (services.embedded.measure_speed: reading and writing tokens
   per second), and each cold run's wall time against what that speed predicts for its tokens: the smoke test
   (tests/smoke/test_embedded.py) waits SAFETY times the prediction, so this ratio must stay well below SAFETY.

Run: .venv/bin/python bench/dcr_embedded.py   (or `make bench`)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from record import record, start

from db.engine import make_engine
from services import dcr, runs
from services.config import BackendConfig
from services.embedded import get_embedded_server, measure_speed
from services.samples import load_samples
from services.text import split_sentences


def main() -> None:
    backend = BackendConfig(kind="embedded")
    began, figures = start(), {}
    sample = next(s for s in load_samples() if s.id == "harbour-bridge")
    n_words, n_sent = len(sample.reference.split()), len(split_sentences(sample.candidate))
    print(f"article: {n_words} words; summary: {n_sent} sentences; model: {backend.model}")

    t = time.perf_counter()
    get_embedded_server().ensure_started()
    print(f"embedded server start: {time.perf_counter() - t:.1f} s (once per app process, not counted below)")
    t = time.perf_counter()
    speed = measure_speed(get_embedded_server().base_url, timeout=600)
    print(f"speed: {speed} (measured in {time.perf_counter() - t:.1f} s)")
    figures["model speed on this machine"] = str(speed)

    with tempfile.TemporaryDirectory() as tmp:
        for amc in ("rule", "llm"):
            engine = make_engine(f"sqlite:///{tmp}/bench-{amc}.db")  # a cold cache for each converter
            cfg = dcr.DCRConfig(amc=amc)
            t = time.perf_counter()
            run_id = runs.start_run(engine, backend, sample.reference, sample.candidate, cfg)
            cold = time.perf_counter() - t
            first = runs.load(engine, run_id)
            t = time.perf_counter()
            run2 = runs.start_run(engine, backend, sample.reference, sample.candidate, cfg)
            warm = time.perf_counter() - t
            second = runs.load(engine, run2)
            assert first is not None and second is not None
            u = first.usage
            calls = max(1, u["calls"])
            predicted = calls * speed.seconds_for(u["prompt_tokens"] / calls, u["completion_tokens"] / calls)
            print(
                f"DCE+AMC ({amc} converter): cold {cold:.2f} s, {u['calls']} call(s), "
                f"{u['prompt_tokens']} prompt + {u['completion_tokens']} completion tokens, "
                f"{cold / predicted:.2f}x the time the measured speed predicts | "
                f"second run: {warm:.2f} s, {second.usage['calls']} call(s), {second.usage['cache_hits']} cache hit(s)"
            )
            figures |= {
                f"DCE+AMC, {amc} converter: cold wall s": cold,
                f"DCE+AMC, {amc} converter: calls": u["calls"],
                f"DCE+AMC, {amc} converter: cold over the time the speed predicts": cold / predicted,
                f"DCE+AMC, {amc} converter: calls of a second run": second.usage["calls"],
            }

        agree = compared = 0
        for s in load_samples():
            cfg = dcr.DCRConfig(task=s.task, amc="llm")  # type: ignore[arg-type]
            d = runs.load(engine, runs.start_run(engine, backend, s.reference, s.candidate, cfg))
            ag = d.rounds[0].evaluation.amc_agreement if d and d.rounds else None
            if ag:
                agree, compared = agree + ag[0], compared + ag[1]
        share = f"{agree / compared:.0%}" if compared else "n/a"
        print(f"rule vs LLM converter on the bundled samples: agree on {agree} of {compared} reasons ({share})")
    get_embedded_server().stop()
    figures["rule vs LLM converter on the bundled samples"] = f"{agree} of {compared} reasons ({share})"
    record("dcr", "dcr_embedded", figures, started=began)


if __name__ == "__main__":
    main()
