"""What refusing hostile input costs, and what the largest input still accepted costs to read.

1. A zip bomb as a .docx (1 GB of spaces in about 1 MB), refused from its directory; the same bomb with a
   directory that under-states its size, refused while unpacking; a 300 MB JSONL file, refused from its size.
2. The worst .docx the limits let through: 20,000 one-letter paragraphs; 50,000 runs of text in them; 9 MB of
   text in one paragraph (refused later, by the character limit of an evaluation).

Each line gives the time taken and the most memory Python held (tracemalloc), and the process's peak RSS so
far. One run each: the figures vary with the machine and its load. Run: .venv/bin/python bench/upload_bounds.py
"""

from __future__ import annotations

import io
import resource
import sys
import tempfile
import time
import tracemalloc
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import docx
from record import record, start

from services import tables
from services.text import MAX_PARAGRAPHS, MAX_RUNS, read_document
from tests.support.documents import MB, bomb, understated

ROWS: list[dict] = []


def measure(label: str, fn, *args) -> None:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        out = fn(*args)
        result = f"accepted ({len(out):,} characters)" if isinstance(out, str) else "accepted"
    except Exception as exc:  # the refusal is the result
        result = f"refused: {str(exc)[:100]}"
    took = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{label:<44} {took * 1000:>8.0f} ms  peak {peak / MB:>6.1f} MB  rss {rss:>5.0f} MB  {result}")
    ROWS.append({"input": label, "ms": took * 1000, "peak MB (traced)": peak / MB, "result": result.split(":")[0]})


def with_body(body: str) -> bytes:
    """A real .docx (python-docx's template) whose body is `body`."""
    buf = io.BytesIO()
    docx.Document().save(buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    head = src.read("word/document.xml").decode().split("<w:body>")[0] + "<w:body>"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            is_doc = info.filename == "word/document.xml"
            z.writestr(info, head + body + "</w:body></w:document>" if is_doc else src.read(info))
    return out.getvalue()


def main() -> None:
    began = start()
    b = bomb(1024 * MB)
    print(f"(the bomb: {len(b) / 1024:,.0f} kB holding 1,024 MB)")
    measure("1 GB zip bomb .docx", read_document, "bomb.docx", b)
    measure("80 MB bomb, directory says 1,000 bytes", read_document, "liar.docx", understated(bomb(80 * MB), 1000))
    with tempfile.TemporaryDirectory() as tmp:
        huge = Path(tmp) / "huge.jsonl"
        with huge.open("wb") as f:
            f.truncate(300 * MB)  # sparse: no disk used
        measure("300 MB JSONL file", tables.read_file, huge)
    run = "<w:r><w:t>a</w:t></w:r>"
    paragraphs = with_body(f"<w:p>{run}</w:p>" * MAX_PARAGRAPHS)
    measure(f"{MAX_PARAGRAPHS:,} paragraphs (the limit)", read_document, "p.docx", paragraphs)
    runs = with_body(f"<w:p>{run * (MAX_RUNS // MAX_PARAGRAPHS)}</w:p>" * MAX_PARAGRAPHS)
    measure(f"{MAX_RUNS:,} runs (the limit)", read_document, "r.docx", runs)
    text = with_body(f"<w:p><w:r><w:t>{'a' * 9 * MB}</w:t></w:r></w:p>")
    measure("9 MB of text in one paragraph", read_document, "t.docx", text)
    record("datasets", "upload_bounds", {"hostile and largest accepted inputs": ROWS}, started=began)


if __name__ == "__main__":
    main()
