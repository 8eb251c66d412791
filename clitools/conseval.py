"""`cli.py conseval`: a ConsEval study from a terminal, every alpha with its interval and n as JSON.

    python cli.py conseval [--input FILE] --criteria Helpfulness,Factuality --scales 5-P,7-P,likert,binary \
        --samples 5 [--definitions none,short,long] [--methods base,dicl_r,dicl_sm] [--oracle imported]
        [--score-scale 5-P] [--oracle endpoint --oracle-endpoint 'URL|MODEL' ...] [--answer-format plain|structured]
        [--split 8:2|leave-one-out] [--limit N] [--boot 1000] [--seed 0] [--output FILE.json]

Without --input the bundled items of each criterion are rated. Scales may be named as in the paper ("11-P (NEG)")
or by a short alias (5p, 7p, 10p, 11p-pos, 11p-neg, likert, binary). Exit 0 when the study finishes, 1 when it
fails (the reason is printed), 2 when the input or the options cannot be used.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from clitools import CONSEVAL_ANSWER_FORMATS, CONSEVAL_SPLITS, positive_int
from services import tables
from services.errors import InputError

if TYPE_CHECKING:
    from services import conseval as ce

ALIASES = {
    "5p": "5-P",
    "7p": "7-P",
    "10p": "10-P",
    "11p-pos": "11-P (POS)",
    "11p": "11-P (POS)",
    "11p-neg": "11-P (NEG)",
    "likert": "5-P Likert",
    "5p-likert": "5-P Likert",
    "binary": "Binary",
}


def scale_keys(text: str) -> list[str]:
    """Scale names or aliases, comma-separated, as the keys of services.conseval.SCALES."""
    from services import conseval as ce

    out = []
    by_lower = {k.lower(): k for k in ce.SCALES}
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        key = by_lower.get(part.lower()) or ALIASES.get(part.lower().replace(" ", ""))
        if key is None:
            raise InputError(f"unknown scale {part!r}; use one of {', '.join(ce.SCALES)} or {', '.join(ALIASES)}")
        out.append(key)
    return list(dict.fromkeys(out))


def criteria_names(text: str) -> list[str]:
    from services import conseval as ce

    by_lower = {c.lower(): c for c in ce.CRITERIA}
    return list(dict.fromkeys(by_lower.get(p.strip().lower(), p.strip()) for p in text.split(",") if p.strip()))


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `conseval` on cli.py's subparsers."""
    p = subparsers.add_parser(
        "conseval",
        help="ConsEval: self- and inter-consistency (Krippendorff's alpha) and accuracy of an LLM evaluator",
        description="Runs a ConsEval study with the configured backend and writes every alpha with its interval and n.",
    )
    p.add_argument(
        "--input", type=Path, help="JSONL or CSV: query, response[, criterion][, score]; default: bundled items"
    )
    p.add_argument("--criteria", required=True, help="comma-separated, e.g. Harmlessness,Conciseness")
    p.add_argument("--scales", required=True, help="comma-separated, e.g. 5-P,7-P,11p-pos,likert,11p-neg,binary,10p")
    p.add_argument("--samples", type=int, default=5, help="samples n at temperature 1.0 (default 5; 0 = greedy only)")
    p.add_argument("--definitions", default="none,short,long", help="criterion definitions (default none,short,long)")
    p.add_argument("--methods", default="base", help="base, dicl_r, dicl_sm (dICL needs --oracle)")
    p.add_argument("--k", type=int, default=5, help="examples for dICL (default 5)")
    p.add_argument(
        "--oracle",
        choices=["none", "imported", "endpoint"],
        default="none",
        help="imported: the score column of --input is the oracle; endpoint: --oracle-endpoint models "
        "(for dICL and accuracy)",
    )
    p.add_argument(
        "--oracle-endpoint",
        action="append",
        default=[],
        metavar="BASE_URL|MODEL",
        help="an oracle endpoint (repeat for several; their examples are pooled, accuracy is per oracle; "
        "the key comes from OPENAI_API_KEY)",
    )
    p.add_argument(
        "--answer-format",
        choices=CONSEVAL_ANSWER_FORMATS,
        default="plain",
        help="plain: the paper's reply after 'Answer:' (default); structured: {\"score\": ...} output",
    )
    p.add_argument(
        "--split",
        choices=CONSEVAL_SPLITS,
        default="8:2",
        help="with dICL: 8:2 (paper 7.1; examples from 80%%, results on 20%%) or leave-one-out",
    )
    p.add_argument("--score-scale", help="the scale of the input's score column (e.g. 5-P)")
    p.add_argument("--limit", type=int, default=None, help="at most this many items per criterion")
    p.add_argument("--no-greedy", action="store_true", help="skip the greedy (temperature 0) answer")
    p.add_argument("--boot", type=int, default=1000, help="bootstrap resamples for the 95%% intervals (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--concurrency", type=positive_int, default=None, help="answers in flight at once")
    p.add_argument("--output", type=Path, help="JSON file to write (default: print to stdout)")
    p.set_defaults(func=run)
    return p


def build(args: argparse.Namespace) -> tuple[ce.StudyConfig, list[ce.ItemIn]]:
    """The study's configuration and items from the command line; InputError when they cannot be used."""
    from services import conseval as ce
    from services.config import backend_from_settings

    backend = backend_from_settings()
    criteria = criteria_names(args.criteria)
    score_scale = scale_keys(args.score_scale)[0] if args.score_scale else None
    cfg = ce.StudyConfig(
        criteria=criteria,
        scales=scale_keys(args.scales),
        granularities=[g.strip().lower() for g in args.definitions.split(",") if g.strip()],
        models=[ce.ModelSpec.of(backend)],
        n_samples=args.samples,
        greedy=not args.no_greedy,
        methods=[m.strip().lower() for m in args.methods.split(",") if m.strip()],
        k=args.k,
        oracle=args.oracle,
        oracle_models=[oracle_spec(e) for e in args.oracle_endpoint],
        answer_format=args.answer_format,
        split=args.split,
        seed=args.seed,
        n_boot=args.boot,
        concurrency=args.concurrency or backend.concurrency,
    )
    if args.input is not None:
        data = tables.read_file(args.input, "Use a smaller file of items.")
        items = ce.read_items(data, args.input.name, criteria=criteria, score_scale=score_scale)
        items = ce.limit_items(items, args.limit)
    else:
        items = ce.sample_items(criteria, args.limit)
    cfg.validate()
    return cfg, items


def oracle_spec(text: str) -> ce.ModelSpec:
    """An oracle endpoint written BASE_URL|MODEL (its label is the model's name)."""
    from services import conseval as ce

    url, sep, model = text.partition("|")
    if not sep or not url.strip() or not model.strip():
        raise InputError(f"--oracle-endpoint {text!r}: write it as BASE_URL|MODEL")
    return ce.ModelSpec(label=model.strip(), kind="openai", base_url=url.strip().rstrip("/"), model=model.strip())


def report(study: ce.ConsevalStudyPublic) -> dict:
    """The JSON written: the study, its configuration, usage and every result row (alpha or r, interval, n, note)."""
    from services import conseval as ce

    df = ce.results_frame(study.results)
    rows = json.loads(df.to_json(orient="records")) if not df.empty else []
    return {
        "study_id": study.id,
        "status": study.status,
        "error": study.error,
        "config": study.config,
        "answers": study.n_done,
        "calls": study.calls,
        "cache_hits": study.cache_hits,
        "missing": (study.results or {}).get("missing"),
        "mappings": {k: s.mapping for k, s in ce.SCALES.items()},
        "results": rows,
    }


def run(args: argparse.Namespace) -> int:
    """Run the study and write its JSON; 1 when it fails, 2 when the input or the options cannot be used."""
    from services import conseval as ce
    from services.database import get_engine

    if args.boot < 0 or args.samples < 0:
        print("error: --boot and --samples must be 0 or more", file=sys.stderr)
        return 2
    try:
        cfg, items = build(args)
        engine = get_engine()
        sid = ce.create_study(engine, cfg, items, name="cli: " + ", ".join(cfg.criteria))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    st = ce.get_study(engine, sid)
    print(f"study {sid}: {len(items)} item(s) · {cfg.models[0].label} · {st.n_planned} answers to ask", file=sys.stderr)

    def progress(done: int, total: int) -> None:
        print(f"  {done}/{total} answers", file=sys.stderr)

    st = ce.run_study(engine, sid, on_progress=progress)
    out = report(st)
    text = json.dumps(out, indent=2, ensure_ascii=False)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        print(text)
    for r in out["results"]:
        if r["kind"] == "SC" or r["kind"].startswith("IC"):
            v = "undefined" if r["value"] is None else f"{r['value']:.3f}"
            ci = f" [{r['ci_low']:.3f}, {r['ci_high']:.3f}]" if r.get("ci_low") is not None else ""
            print(
                f"{r['kind']:4} {r['criterion']:13} {r['granularity']:5} {r['scale']:28} {r['mode']:6} alpha {v}{ci} "
                f"n={r['n']}" + (f" ({r['note']})" if r["value"] is None else ""),
                file=sys.stderr,
            )
    print(f"{st.status}: {st.n_done} answers, {st.calls} calls, {st.cache_hits} cache hits", file=sys.stderr)
    if st.status != "done":
        print(f"error: {st.error or st.status}", file=sys.stderr)
        return 1
    return 0
