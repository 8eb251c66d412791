"""The floor under any page: a bare Streamlit page with what the app's pages are made of, in the same browser.

Each variant is a page of a few lines, none of this project's code, served by `streamlit run` from a temporary
folder and opened in headless Chromium with the browser tests' flags and window (tests/support/browser.py):

  title     a title only (what every page draws first)
  markdown  a title and 40 short Markdown lines
  table     a title and a 3-row st.dataframe
  plotly    a title and one Plotly chart of 3 points
  all       a title, the chart and the table

Each variant is opened twice in a *new* session (a new browser context: Streamlit's scripts fetched and compiled
again, as for a reader's first visit or a browser test) and twice as a *revisit* (a new tab in a profile that has
already opened the app, so its HTTP cache holds Streamlit's scripts), with scale_pages.py's definitions: first
content (the title drawn), settled (nothing changed for 3 s, no running indicator, spinner or skeleton), the
server's CPU seconds over the visit, and Chromium's (all its processes). What a project page takes beyond the
variant that has its kinds of element is the page's own; what the variant takes is Streamlit's and the
browser's on this machine, whatever the page does.

Run: .venv/bin/python bench/streamlit_floor.py [--variants title markdown table plotly all] [--visits 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from pages_small import browser_cpu  # noqa: E402
from record import record, start  # noqa: E402
from scale_pages import Monitor, drive  # noqa: E402

VARIANTS = ("title", "markdown", "table", "plotly", "all")

PAGE = """
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

kind = st.query_params.get("kind", "title")
st.title("Floor")
if kind in ("plotly", "all"):
    st.plotly_chart(go.Figure(go.Scatter(x=[0.2, 0.5, 0.7], y=["a", "b", "c"], mode="markers")))
if kind in ("table", "all"):
    st.dataframe(pd.DataFrame({"judge": ["a", "b", "c"], "n": [60, 60, 60], "rate": [0.5, 0.6, 0.7]}), hide_index=True)
if kind == "markdown":
    for i in range(40):
        st.markdown(f"Line **{i}**, a sentence of about the length of a caption on the pages.")
"""


def main() -> None:
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, VIEWPORT, free_port, server_flags, wait_healthy

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--visits", type=int, default=2, help="visits of each kind (new session, revisit)")
    args = ap.parse_args()

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    began, rows = start(), []
    with tempfile.TemporaryDirectory(prefix="cs-floor-") as tmp:
        page_file = Path(tmp) / "floor.py"
        page_file.write_text(PAGE)
        log = Path(tmp) / "streamlit.log"
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.upper().startswith("STREAMLIT_")}
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", str(page_file), *server_flags(port)],
                cwd=tmp,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_healthy(base, proc, log, 180)
            monitor = Monitor(proc.pid)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
                profile = browser.new_context(viewport=VIEWPORT)  # the revisits' profile, its cache filled once
                first = profile.new_page()
                drive(first, f"{base}/?kind=all", monitor)
                first.close()
                for kind in args.variants:
                    for how in ["new"] * args.visits + ["revisit"] * args.visits:
                        context = browser.new_context(viewport=VIEWPORT) if how == "new" else profile
                        page = context.new_page()
                        chromium0 = browser_cpu()
                        r = drive(page, f"{base}/?kind={kind}", monitor)
                        chromium = browser_cpu() - chromium0
                        page.close()
                        if how == "new":
                            context.close()
                        rows.append(
                            {
                                "variant": kind,
                                "visit": how,
                                "first content s": r["first"],
                                "settled s": r["settled"],
                                "server CPU s": r["cpu"],
                                "Chromium CPU s": chromium,
                            }
                        )
                        print(
                            f"  {kind:9} {how:8} first {r['first']:4.1f} s · settled {r['settled']:4.1f} s · "
                            f"server CPU {r['cpu']:4.2f} s · Chromium CPU {chromium:5.2f} s · "
                            f"load {os.getloadavg()[0]:.1f}",
                            flush=True,
                        )
                browser.close()
        finally:
            proc.terminate()
            proc.wait(30)
    record("pages", "streamlit_floor", {"a bare Streamlit page in headless Chromium": rows}, started=began)


if __name__ == "__main__":
    main()
