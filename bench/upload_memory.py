"""An upload through the Datasets page, in a real browser: the app's memory before, while the file is uploaded and
previewed, while it is imported, once imported, and after the tab is closed.

It writes bench/scale.py's synthetic pairs (300-word references; 100,000 pairs are about 240 MB), starts the app as
users do (`python serve.py`, SQLite, no worker), opens the Datasets page in headless Chromium, gives the file to the
page's uploader (the browser sends it to the server as a user's would), waits for the preview, clicks Import,
waits for the outcome, and closes the tab. The app's resident memory (its process tree, from /proc) is sampled
every 0.2 s: the peak of each phase and the memory at its end; CPU seconds of the app over each phase too.

Run: .venv/bin/python bench/upload_memory.py [N ...] (default 10,000 and 100,000 pairs)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from record import record, start  # noqa: E402
from scale import write_file  # noqa: E402
from scale_pages import Monitor, start_app  # noqa: E402

LIMIT_S = 1800.0


def _phase(monitor: Monitor, name: str, out: dict, since: tuple[float, float]) -> tuple[float, float]:
    """Close a phase: its peak (since the last one), the memory now and the app's CPU over it."""
    now = monitor.rss_now() / 2**20
    cpu = monitor.cpu()
    out[name] = {"peak MB": max(monitor.peak_rss / 2**20, now), "end MB": now, "app CPU s": cpu - since[1]}
    monitor.peak_rss = 0  # the next phase's peak
    return now, cpu


def run(n: int, browser, tmp: Path) -> dict:
    path = tmp / f"pairs-{n}.jsonl"
    write_file(path, n)
    size_mb = path.stat().st_size / 2**20
    proc, app = start_app(tmp, f"sqlite:///{tmp}/upload-{n}.db", None)
    monitor = Monitor(proc.pid)
    out: dict = {}
    try:
        ctx = browser.new_context(viewport={"width": 1400, "height": 1400})
        page = ctx.new_page()
        page.goto(f"{app}/Datasets", wait_until="commit")
        page.locator('[data-testid="stMain"] h1').first.wait_for(state="visible", timeout=LIMIT_S * 1000)
        time.sleep(2)
        mark = _phase(monitor, "page open", out, (0.0, monitor.cpu()))
        page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(path))
        page.get_by_text("Preview of the first rows").first.wait_for(state="visible", timeout=LIMIT_S * 1000)
        page.get_by_role("button", name="Import", exact=True).wait_for(state="visible", timeout=LIMIT_S * 1000)
        time.sleep(2)
        mark = _phase(monitor, "uploaded and previewed", out, mark)
        page.get_by_role("button", name="Import", exact=True).click()
        page.get_by_text("item(s) from").first.wait_for(state="visible", timeout=LIMIT_S * 1000)
        time.sleep(2)
        mark = _phase(monitor, "imported", out, mark)
        ctx.close()
        time.sleep(10)  # the session ends after the tab closes
        _phase(monitor, "tab closed", out, mark)
    finally:
        monitor.stop()
        proc.terminate()
        proc.wait(timeout=30)
    log = (tmp / "streamlit.log").read_text(errors="replace")
    if "Traceback" in log:
        print(f"  the app logged a traceback:\n{log[-3000:]}")
    return {"file MB": size_mb, "phases": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[10_000, 100_000])
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    began, rows = start(), []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        for n in args.sizes:
            with tempfile.TemporaryDirectory(prefix="cs-upload-") as tmp:
                got = run(n, browser, Path(tmp))
            print(f"\n{n:,} pairs, {got['file MB']:.0f} MB file:")
            for phase, r in got["phases"].items():
                cpu = r["app CPU s"]
                print(f"  {phase:<24} peak {r['peak MB']:6.0f} MB · end {r['end MB']:6.0f} MB · CPU {cpu:.1f} s")
                rows.append({"pairs": n, "file MB": round(got["file MB"]), "phase": phase} | r)
        browser.close()
    record("datasets", "upload_memory", {"upload through the Datasets page (app memory)": rows}, started=began)


if __name__ == "__main__":
    main()
