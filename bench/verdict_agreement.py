"""Agreement between the rule converter and the LLM converter (Table 9) on the committed phrasing corpus.

For each reason of tests/corpora/verdict_phrasings.jsonl: the corpus label, the rule converter's reading, and the
LLM converter's mark (the paper's Auto-Metric Converter prompt, asked in chunks of `--chunk` reasons). Prints
how often each agrees with the label and with the other, and how often each reads a stated verdict with the
opposite sign.

Run: .venv/bin/python bench/verdict_agreement.py [--chunk 5] [--limit N]
     (no LLM_BASE_URL: the embedded demo model; else the configured backend)
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
from services.config import backend_from_settings
from services.llm import LLMClient, get_client
from services.prompts import dcr as P

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpora" / "verdict_phrasings.jsonl"
SIGN = {"consistent": 1, "inconsistent": -1, "unknown": None}


def llm_marks(client: LLMClient, reasons: list[str]) -> list[int | None]:
    paragraphs = ",\n".join("*" + json.dumps(r, ensure_ascii=False) for r in reasons)
    res = client.chat_json(
        [{"role": "user", "content": P.AMC.render(paragraphs=paragraphs)}],
        parse=dcr.AMCOutput.model_validate,
        schema=dcr.amc_schema(len(reasons)),
        prompt_version=P.AMC.id,
        stage="amc",
    )
    if not res.ok or len(res.value.answer) != len(reasons):  # type: ignore[union-attr]
        return [None] * len(reasons)
    return list(res.value.answer)  # type: ignore[union-attr]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunk", type=int, default=5)
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    rows = [json.loads(line) for line in CORPUS.open(encoding="utf-8")]
    rows = [r for r in rows if r["reason"].strip()][: args.limit or None]
    backend = backend_from_settings()
    client = get_client(backend)
    print(f"{len(rows)} reasons · converter model: {backend.label}")
    began, started = start(), time.perf_counter()
    llm: list[int | None] = []
    for i in range(0, len(rows), args.chunk):
        llm += llm_marks(client, [r["reason"] for r in rows[i : i + args.chunk]])
    rule = [dcr.rule_mark(r["reason"]) for r in rows]
    gold = [SIGN[r["verdict"]] for r in rows]
    stated = [i for i, g in enumerate(gold) if g is not None]
    both = [i for i in range(len(rows)) if rule[i] is not None and llm[i] is not None]

    def share(n: int, d: int) -> str:
        return f"{n}/{d} = {n / d:.1%}" if d else "n/a"

    print(
        f"LLM converter answered {sum(m is not None for m in llm)}/{len(rows)} in {time.perf_counter() - started:.0f} s"
    )
    print("rule vs LLM, where both give a mark:", share(sum(rule[i] == llm[i] for i in both), len(both)))
    print(
        "rule vs LLM over every reason (unknown counts as a disagreement):",
        share(sum(rule[i] == llm[i] and rule[i] is not None for i in range(len(rows))), len(rows)),
    )
    figures = {
        "reasons": len(rows),
        "converter model": backend.label,
        "rule vs LLM, where both give a mark": share(sum(rule[i] == llm[i] for i in both), len(both)),
    }
    for name, marks in (("rule", rule), ("LLM", llm)):
        right = sum(marks[i] == gold[i] for i in stated)
        flipped = sum(marks[i] is not None and marks[i] == -gold[i] for i in stated)  # type: ignore[operator]
        n = len(stated)
        print(f"{name}: matches the stated verdict {share(right, n)}; opposite sign {share(flipped, n)}")
        figures |= {f"{name}: matches the stated verdict": share(right, n), f"{name}: opposite sign": share(flipped, n)}
    record("dcr", "verdict_agreement", figures, started=began)


if __name__ == "__main__":
    main()
