"""Cost of each factual-inconsistency method per document on QAGS-CNN/DM with the embedded model.

For the first --limit documents of ../shared/data/qags_cnndm_mturk.jsonl, each method (DCE-AMC, Summ-NLI,
Sent-NLI with window --window, QG-QA) runs on the article and its summary with no cache, and the bench
prints, per method: documents, model calls, prompt and completion tokens and wall time per document,
parse failures (windows or pairs with no readable verdict), how often the long-document retrieval of
Appendix B was used, and the balanced accuracy against the QAGS majority label (inconsistency positive).
Each document's figures are appended to --out as they finish, so a run stopped early can be summarised
with --summarize.

Run: nice -n 10 .venv/bin/python bench/nli_methods.py --limit 50 [--out bench-nli.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from record import record, start

from services import dcr
from services.config import BackendConfig
from services.datasets import read_qags
from services.embedded import get_embedded_server
from services.llm import UsageLedger, get_client
from services.nli import paradigms as nli
from services.nli.retrieval import CONTEXT_BUDGET_TOKENS
from services.text import estimate_tokens

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "qags_cnndm_mturk.jsonl"
METHODS = ("dce-amc", "summ-nli", "sent-nli", "qg-qa")


def run_one(backend: BackendConfig, method: str, reference: str, sentences: list[str], window: int) -> dict:
    """One method on one document with a fresh ledger and no cache: calls, tokens, wall time, verdict."""
    ledger = UsageLedger()
    client = get_client(backend, ledger=ledger)
    summary = " ".join(sentences)
    t = time.perf_counter()
    retrieved = False
    if method == "dce-amc":
        rnd = dcr.first_round(client, reference, sentences, dcr.DCRConfig())
        ev = rnd.evaluation
        consistent = None if ev.score is None or ev.n_judged == 0 else ev.all_consistent
        failed = ev.n_unknown
    else:
        res = nli.run_method(client, reference, summary, method, window=window)
        rec = nli.result_record(res, method, summary, window=window)
        consistent = None if rec["label"] is None else rec["label"] == "consistent"
        failed = rec["n_failed"]
        retrieved = any(
            (u.get("context") is not None)
            for u in [rec.get("summary") or {}, *rec.get("windows", []), *rec.get("pairs", [])]
        )
    wall = time.perf_counter() - t
    usage = ledger.summary()
    return {
        "method": method,
        "calls": usage["calls"],
        "prompt_tokens": usage["prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
        "wall_s": round(wall, 2),
        "consistent": consistent,
        "failed_units": failed,
        "retrieved": retrieved,
    }


def table(rows: list[dict]) -> list[dict]:
    """Per method: means per document and balanced accuracy against the human label."""
    out = []
    for m in METHODS:
        rs = [r for r in rows if r["method"] == m]
        if not rs:
            continue
        n = len(rs)

        def mean(key: str, rs: list[dict] = rs, n: int = n) -> float:
            return sum(r[key] for r in rs) / n

        judged = [r for r in rs if r["consistent"] is not None and r["human_label"] is not None]
        # inconsistency is the positive class, as in the paper's Table 4
        pos = [r for r in judged if r["human_label"] == 0]
        neg = [r for r in judged if r["human_label"] == 1]
        bacc = None
        if pos and neg:
            tpr = sum(not r["consistent"] for r in pos) / len(pos)
            tnr = sum(r["consistent"] for r in neg) / len(neg)
            bacc = (tpr + tnr) / 2
        out.append(
            {
                "method": m,
                "docs": n,
                "calls/doc": mean("calls"),
                "prompt tok/doc": mean("prompt_tokens"),
                "compl tok/doc": mean("completion_tokens"),
                "wall s/doc": mean("wall_s"),
                "fail units": sum(r["failed_units"] for r in rs),
                "retrieval": sum(r["retrieved"] for r in rs),
                "no verdict": sum(r["consistent"] is None for r in rs),
                "bal. acc": bacc,
            }
        )
    return out


def summarize(rows: list[dict]) -> str:
    """The printed table: per method, means per document and balanced accuracy against the human label."""
    head = (
        f"{'method':<10} {'docs':>4} {'calls/doc':>9} {'prompt tok/doc':>14} {'compl tok/doc':>13} "
        f"{'wall s/doc':>10} {'fail units':>10} {'retrieval':>9} {'no verdict':>10} {'bal. acc':>8}"
    )
    lines = [head, "-" * len(head)]
    for t in table(rows):
        bacc = "n/a" if t["bal. acc"] is None else f"{t['bal. acc']:.3f}"
        lines.append(
            f"{t['method']:<10} {t['docs']:>4} {t['calls/doc']:>9.1f} {t['prompt tok/doc']:>14.0f} "
            f"{t['compl tok/doc']:>13.0f} {t['wall s/doc']:>10.1f} {t['fail units']:>10} "
            f"{t['retrieval']:>9} {t['no verdict']:>10} {bacc:>8}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=50, help="the first N documents (default 50)")
    ap.add_argument("--window", type=int, default=1, help="Sent-NLI / QG-QA window w (default 1)")
    ap.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset of " + ",".join(METHODS))
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--out", default=None, help="append each document's figures here (JSONL)")
    ap.add_argument("--resume", action="store_true", help="keep the --out file's rows and run only what it lacks")
    ap.add_argument("--summarize", default=None, help="only print the table of a finished or partial --out file")
    args = ap.parse_args(argv)
    if args.summarize:
        rows = [json.loads(line) for line in Path(args.summarize).read_text().splitlines() if line.strip()]
        print(f"{len({r['doc'] for r in rows})} document(s) in {args.summarize}")
        print(summarize(rows))
        return 0
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        print(f"error: unknown method(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    items = read_qags(Path(args.data).read_bytes()).items[: args.limit]
    backend = BackendConfig(kind="embedded")
    t = time.perf_counter()
    get_embedded_server().ensure_started()
    print(f"model {backend.model}; embedded server start {time.perf_counter() - t:.1f} s (not counted)")
    over = sum(estimate_tokens(it.reference) > CONTEXT_BUDGET_TOKENS for it in items)
    print(f"{len(items)} document(s); {over} over the {CONTEXT_BUDGET_TOKENS}-token budget; window {args.window}")
    rows: list[dict] = []
    began = start()
    if args.resume and args.out and Path(args.out).is_file():
        rows = [json.loads(line) for line in Path(args.out).read_text().splitlines() if line.strip()]
        print(f"resuming: {len(rows)} (document, method) row(s) already in {args.out}")
    done = {(r["doc"], r["method"]) for r in rows}
    out = Path(args.out).open("a", encoding="utf-8") if args.out else None
    try:
        for k, it in enumerate(items):
            for m in methods:
                if (k, m) in done:
                    continue
                row = run_one(backend, m, it.reference, list(it.sentences), args.window)
                row |= {"doc": k, "human_label": it.human_label, "n_sentences": len(it.sentences)}
                rows.append(row)
                if out:
                    out.write(json.dumps(row) + "\n")
                    out.flush()
            print(f"[{k + 1}/{len(items)}] done", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print("stopped early: the table covers the documents finished", file=sys.stderr)
    finally:
        if out:
            out.close()
        get_embedded_server().stop()
    print(summarize(rows))
    label = f"{len({r['doc'] for r in rows})} QAGS-CNN documents, window {args.window}, embedded model"
    record("nli", "nli_methods", {label: table(rows)}, started=began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
