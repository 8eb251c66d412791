"""`cli.py dhp`: the DHP benchmark headless.

    python cli.py dhp run --task T --input FILE --models M [M ...] [--repeats R] [--seed S] --output FILE.json
        [--perturbations KEY ...] [--rule-only] [--perturber MODEL] [--weights EW.json] [--scores-out FILE.csv]
        [--answer-format plain|structured]
    python cli.py dhp stats --scores SCORES.csv [--weights EW.json] [--task T] --output FILE.json

`run` perturbs the items of FILE (JSONL, JSON list or CSV with id, text, source and, for story endings,
wrong_ending), scores the originals and every perturbed text with each model (r times per metric, averaged)
and writes p per metric, the combined p-values, D (the paper's), D_EW and D_wilson (an extra) per
perturbation, D_avg and D_min per model
(D_avg empty, with the reason, when the set lacks a level of the task's Table 1 row). The
endpoint comes from LLM_BASE_URL / LLM_API_KEY (each --models name is asked there); without --weights the
newest closed expert survey of the task gives the weights. `stats` does the statistics alone on a CSV with
item_id,perturbation,level,metric,original,perturbed. EW.json maps a perturbation (its key, "typo:minor", or
its kind, "typo") to {metric: weight}. Exit 0 on success, 1 when every run failed, 2 for unusable input.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clitools import DHP_ANSWER_FORMATS
from services import tables
from services.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from services import dhp
    from services.dhp import perturb


def _read_text(path: Path) -> str:
    return tables.decode(tables.read_file(path), str(path), allow_empty=True)


def read_items(path: Path) -> list[perturb.Item]:
    """Items from JSONL, a JSON list (or {"items": [...]}) or CSV, with id, text and optional source."""
    from services import dhp

    text = _read_text(path)
    try:
        return dhp.parse_items_upload(str(path), text)
    except ValueError as exc:
        raise InputError(str(exc) if str(path) in str(exc) else f"{path}: {exc}") from None


def read_weights(path: Path | None) -> dict[str, dict[str, float]] | None:
    """EW.json: {perturbation: {metric: weight}}, weights numbers of 0 or more."""
    if path is None:
        return None
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise InputError(f'{path}: expected {{"perturbation": {{"metric": weight, ...}}, ...}}')
    out: dict[str, dict[str, float]] = {}
    for pert, ws in data.items():
        for metric, w in ws.items():
            if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) or w < 0:
                raise InputError(f"{path}: weight of {pert!r} / {metric!r} must be a number of 0 or more, got {w!r}")
        out[str(pert)] = {str(m): float(w) for m, w in ws.items()}
    return out


def read_scores(path: Path) -> pd.DataFrame:
    """SCORES.csv with item_id,perturbation,level,metric,original,perturbed (numeric scores)."""
    import pandas as pd

    from services import dhp

    df = tables.read_frame(path, fmt="csv")
    missing = [c for c in dhp.SCORE_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {', '.join(missing)}; the header must be {','.join(dhp.SCORE_COLUMNS)}"
        )
    if df.empty:
        raise InputError(f"{path}: no rows")
    for col in ("original", "perturbed"):
        values = df[col].str.strip()
        num = pd.to_numeric(values.replace("", None), errors="coerce")
        bad = df[(values != "") & num.isna()]
        if not bad.empty:
            line = int(bad.index[0])  # the frame is indexed by the line each row starts on
            raise InputError(f"{path}:{line}: {col} score {bad.iloc[0][col]!r} is not a number")
        df[col] = num
    return df


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False), encoding="utf-8")


def cmd_stats(args: argparse.Namespace) -> int:
    from services import dhp
    from services.dhp.catalogue import TASKS

    started = time.perf_counter()
    try:
        scores = read_scores(Path(args.scores))
        weights = read_weights(Path(args.weights) if args.weights else None)
        task = TASKS.get(args.task) if args.task else None
        if args.task and task is None:
            raise InputError(f"--task {args.task!r} is not a built-in task ({', '.join(TASKS)})")
        expected = {p.key: p.level for p in task.perturbations} if task else None
        res = dhp.analyse(scores, weights=weights, zero_method=args.zero_method, expected=expected)
    except ValueError as exc:  # InputError or data the statistics cannot use
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = dhp.result_record(res)
    _write_json(Path(args.output), out)
    print(_summary_line(res), file=sys.stderr)
    print(
        f"wrote {args.output} ({len(res.perturbations)} perturbation(s)) in {time.perf_counter() - started:.2f} s",
        file=sys.stderr,
    )
    return 0


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _summary_line(res: dhp.DiscernmentResult) -> str:
    who = f"{res.model}: " if res.model else ""
    line = (
        f"{who}D_avg {_fmt(res.d_avg)} · D_min {_fmt(res.d_min)} · D_EW_avg {_fmt(res.d_ew_avg)} · "
        f"D_EW_min {_fmt(res.d_ew_min)} · D_wilson_avg {_fmt(res.d_wilson_avg)} · D_wilson_min {_fmt(res.d_wilson_min)}"
    )
    return line + (f"\n  D_avg: {res.avg_note}" if res.avg_note else "")


def cmd_run(args: argparse.Namespace) -> int:
    import pandas as pd

    from db.engine import get_session
    from services import dhp
    from services.config import backend_from_settings
    from services.database import get_engine
    from services.dhp import survey as survey_service
    from services.export import frame_csv

    if args.repeats < 1:
        print("error: --repeats must be 1 or more", file=sys.stderr)
        return 2
    engine = get_engine()
    try:
        items = read_items(Path(args.input))
        weights = read_weights(Path(args.weights) if args.weights else None)
        with get_session(engine) as s:
            task = dhp.get_task(args.task, session=s)
            if task is None:
                known = ", ".join(t.key for t in dhp.list_tasks(session=s))
                raise InputError(f"unknown task {args.task!r}; known: {known}")
            if weights is None:
                found = survey_service.closed_weights(task.key, session=s)
                if found is not None:
                    weights = found[1].weights
                    print(f"expert weights from closed survey {found[0].id} ({found[0].title})", file=sys.stderr)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    only = args.perturbations or None
    if only:
        unknown = [k for k in only if k not in {p.key for p in task.perturbations}]
        if unknown:
            print(
                f"error: task {task.key} has no perturbation {', '.join(unknown)}; it has "
                f"{', '.join(p.key for p in task.perturbations)}",
                file=sys.stderr,
            )
            return 2
    base = backend_from_settings()
    models = args.models or [base.model]
    perturber = None if args.rule_only else base.with_changes(model=args.perturber or models[0])
    started = time.perf_counter()
    with get_session(engine) as s:
        sid = dhp.create_set(
            task,
            items,
            name=f"cli: {Path(args.input).name}",
            seed=args.seed,
            session=s,
            backend=perturber,
            only=only,
            answer_format=args.answer_format,
        )
    print(f"set {sid}: {len(items)} item(s) · task {task.key} · seed {args.seed}", file=sys.stderr)
    if perturber is not None:
        failed = dhp.process_set(engine, sid, backend=perturber)
        print(f"LLM-based perturbations by {perturber.model}: {failed} failed", file=sys.stderr)
    with get_session(engine) as s:
        texts = dhp.texts_frame(sid, session=s)
    for r in texts[texts["error"].notna()].itertuples():
        print(f"note: item {r.item_id} · {r.perturbation}: {r.error}", file=sys.stderr)
    out: dict[str, Any] = {
        "task": task.key,
        "set_id": sid,
        "seed": args.seed,
        "repeats": args.repeats,
        "n_items": len(items),
        "weights": weights,
        "models": [],
    }
    all_scores = []
    n_failed = 0
    order = [p.key for p in task.perturbations]
    expected = {p.key: p.level for p in task.perturbations}
    for model in models:
        backend = base.with_changes(model=model)
        with get_session(engine) as s:
            rid = dhp.create_run(
                sid, backend, repeats=args.repeats, seed=args.seed, session=s, answer_format=args.answer_format
            )
        status = dhp.process_run(engine, rid, backend=backend)
        with get_session(engine) as s:
            run = dhp.get_run(rid, session=s)
            scores = dhp.scores_frame(rid, session=s)
        entry: dict[str, Any] = {
            "model": model,
            "run_id": rid,
            "status": status,
            "error": run.error,
            "scores": run.n_done - run.n_failed,
            "failed_scores": run.n_failed,
        }
        if not scores.empty:
            res = dhp.analyse(scores, weights=weights, model=model, order=order, expected=expected)
            entry.update(dhp.result_record(res))
            print(_summary_line(res), file=sys.stderr)
            all_scores.append(scores.assign(model=model))
        else:
            n_failed += 1
            print(f"{model}: no scores ({run.error or 'every call failed'})", file=sys.stderr)
        out["models"].append(entry)
    _write_json(Path(args.output), out)
    if args.scores_out and all_scores:
        frame_csv(pd.concat(all_scores), args.scores_out)
    print(f"wrote {args.output} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 1 if n_failed == len(models) else 0


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `dhp run` and `dhp stats` on cli.py's subparsers."""
    p = subparsers.add_parser(
        "dhp",
        help="DHP: discernment of LLM evaluators by hierarchical perturbation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="dhp_command", required=True)
    run = sub.add_parser("run", help="perturb items, score them with each model, write discernment scores")
    run.add_argument(
        "--task", required=True, help="summarization | sumpubmed | story | qa | translation | a task added in the app"
    )
    run.add_argument("--input", required=True, help="JSONL, JSON or CSV with id, text, source (and wrong_ending)")
    run.add_argument("--models", nargs="+", help="evaluator model names at LLM_BASE_URL (default: LLM_MODEL)")
    run.add_argument("--repeats", type=int, default=5, help="scores per text and metric, averaged (default 5)")
    run.add_argument("--seed", type=int, default=0, help="seed of the rule-based perturbations (default 0)")
    run.add_argument("--output", required=True, help="JSON file to write")
    run.add_argument("--perturbations", nargs="+", help="only these perturbation keys (e.g. typo:minor reorder:major)")
    run.add_argument("--rule-only", action="store_true", help="leave out the LLM-based perturbations")
    run.add_argument("--perturber", help="model that makes the LLM-based perturbations (default: the first model)")
    run.add_argument("--weights", help="EW.json; default: the newest closed survey of the task")
    run.add_argument("--scores-out", help="also write the mean scores as a CSV for `dhp stats`")
    run.add_argument(
        "--answer-format",
        choices=DHP_ANSWER_FORMATS,
        default="plain",
        help="plain: the paper's prompts, replies read as written (default); structured: ask for JSON",
    )
    run.set_defaults(func=cmd_run)
    st = sub.add_parser("stats", help="the statistics alone, from a scores CSV")
    st.add_argument("--scores", required=True, help="CSV: item_id,perturbation,level,metric,original,perturbed")
    st.add_argument("--weights", help="EW.json: {perturbation: {metric: weight}}")
    st.add_argument("--task", help="a built-in task: D_avg is left empty when a level of its Table 1 row is missing")
    st.add_argument("--output", required=True, help="JSON file to write")
    st.add_argument(
        "--zero-method",
        choices=["wilcox", "pratt", "zsplit"],
        default="wilcox",
        help="zero differences: dropped (wilcox, default), ranked then dropped (pratt), split (zsplit)",
    )
    st.set_defaults(func=cmd_stats)
    return p


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dhp")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `dhp ...` on its own, e.g. main(["dhp", "stats", "--scores", "s.csv", "--output", "o.json"])."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
