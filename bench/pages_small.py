"""The ConsEval, DHP and Judges pages at the browser tests' sizes, in a real browser, cold and warm.

Each page gets the data its browser test makes (tests/e2e/test_conseval_browser.py, test_dhp_browser.py,
test_judges_browser.py), in a SQLite file of its own, written through the services against the suite's fake
OpenAI-compatible server (kept running while the page is open, as in the tests):

  ConsEval  a finished study (2 criteria, 4 scales, 2 definitions, 4 items, n = 3 and greedy: 256 answers) with
            a rater, opened at ?study=ID (its Self-consistency tab; --tabs opens the other tabs too);
  DHP       a set of 8 summaries (typo:minor, reorder:major) benchmarked by judge-a and judge-b (r = 1), opened
            at ?view=Texts (the test's first visit) and ?view=Results;
  Home      no data: the app's home page, the floor of any page in a new browser session;
  Meta-evaluation  test_browser.py's batch: its hand-made dataset judged by DCE with the toy judge;
  Judges    the QAGS-CNN file (/work/shared/data, read in place) with the evidence checker and a Summ-NLI judge
            over its first 60 items, and an annotator.

For each page and each way of starting the app (`serve.py`, as `make run` does; `streamlit run app.py`, as the
browser tests did), a fresh server, then the page in headless Chromium in a new session: *cold* (the server's
first visit to any page), *warm* (a second new session in a new browser profile: Streamlit's scripts fetched and
compiled again), *revisit* (a new tab, so a new session, in the warm visit's browser profile: its HTTP cache holds
Streamlit's content-hashed, immutable scripts, as a user's browser does from their second visit on) and *sidebar*
(in that profile, the home page opened, then the page reached by the sidebar's link within the same session, as a
reader moves between pages: only the page's script runs and its elements are drawn), with
scale_pages.py's definitions: first content (the title drawn), settled (nothing changed for 3 s, no running
indicator, spinner or skeleton), the app's CPU seconds over the visit, the app's peak RSS so far, and Chromium's CPU
seconds over the visit (all its processes: loading the page's scripts, drawing tables and Plotly figures).

Run: .venv/bin/python bench/pages_small.py [--pages ConsEval DHP Judges Home Meta-evaluation]
     [--modes serve streamlit] [--tabs] [--keep DIR] [--chromium-args '--flag ...'] [--reduced-motion]
     [--executable PATH]
     (Chromium started with these flags beside the browser tests' own; each session asking for reduced motion)
     (DIR/ConsEval.db etc.: the seeded databases, for bench/profile_page.py)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from record import record, start  # noqa: E402
from scale_pages import TICK, Monitor, _stat, drive, tree  # noqa: E402


def browser_cpu() -> float:
    """CPU seconds so far of this process's Chromium processes (the browser, its renderers and GPU process)."""
    total = 0.0
    for pid in tree(os.getpid()):
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        f = _stat(pid) if name.startswith(("chrom", "headless")) else None
        if f:
            total += (int(f[11]) + int(f[12])) / TICK
    return total


# -- seeding, as the browser tests do ----------------------------------------------------------------------
def seed_conseval(url: str, fake) -> str:
    from db.engine import make_engine
    from tests.support.conseval import browser_study

    engine = make_engine(url)
    try:
        sid, _ = browser_study(engine, fake.base_url)
    finally:
        engine.dispose()
    return f"ConsEval?study={sid}"


DHP_ITEMS = 8


def dhp_judge(body: dict):
    from tests.fakes import last_user
    from tests.support.dhp import rated_text

    originals = {dhp_text(i) for i in range(DHP_ITEMS)}
    content = last_user(body)
    if content.startswith("Reply with the word OK"):
        return "OK"
    return "5" if rated_text(content) in originals else "2"


def dhp_text(i: int) -> str:
    return f"The council met on day {i}. It approved {40 + i} million pounds. Work starts in week {i}."


def seed_dhp(url: str, fake) -> str:
    from db.engine import get_session, make_engine
    from services import dhp
    from services.config import BackendConfig
    from services.dhp.benchmark import process_run
    from services.dhp.catalogue import TASKS
    from services.dhp.perturb import Item

    engine = make_engine(url)
    try:
        items = [Item(f"n{i}", dhp_text(i), "a") for i in range(DHP_ITEMS)]
        with get_session(engine) as s:
            set_id = dhp.create_set(
                TASKS["summarization"], items, name="e2e set", seed=0, session=s, only=["typo:minor", "reorder:major"]
            )
        backends = [
            BackendConfig(kind="openai", base_url=fake.base_url, model=m, max_retries=1) for m in ("judge-a", "judge-b")
        ]
        run_ids, _ = dhp.start_runs(engine, set_id, backends, repeats=1, seed=0)
        for rid, backend in zip(run_ids, backends, strict=True):
            assert process_run(engine, rid, backend=backend) == "done"
    finally:
        engine.dispose()
    return "DHP?view=Results"


def seed_judges(url: str, fake) -> str:
    from db.engine import make_engine
    from services import annotations, datasets
    from services.dcr import DCRConfig
    from services.jobs import batches
    from tests.support.batches import judge_backend
    from tests.support.judges import QAGS_FILE

    eng = make_engine(url)
    try:
        saved, _ = datasets.import_file(eng, name="QAGS-CNN", data=QAGS_FILE.read_bytes(), fmt="qags")
        for cfg in (DCRConfig(method="evidence", max_rounds=0), DCRConfig(method="summ-nli", max_rounds=0)):
            bid = batches.create_batch(eng, dataset_id=saved.id, backend=judge_backend(fake), cfg=cfg, item_limit=60)
            batches.process_batch(eng, bid, backend=judge_backend(fake))
        annotations.create_annotator(eng, "rita")
    finally:
        eng.dispose()
    return "Judges"


def metaeval_judge(body: dict):
    from tests.e2e.test_browser import BAD, FIX
    from tests.fakes import answers_connection_check, toy_judge

    return answers_connection_check(toy_judge(bad=BAD, fix=FIX))(body)


def seed_metaeval(url: str, fake) -> str:
    """test_browser.py's batch: the hand-made dataset judged by DCE with the toy judge, then Meta-evaluation."""
    from db.engine import make_engine
    from services.config import BackendConfig
    from services.dcr import DCRConfig
    from services.jobs import batches
    from tests.metaeval_seed import make_dataset
    from tests.support.metaeval import HAND

    engine = make_engine(url)
    try:
        ds = make_dataset(engine, HAND, name="e2e-batch")
        backend = BackendConfig(kind="openai", base_url=fake.base_url, model="fake-model", max_retries=1)
        bid = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=DCRConfig())
        assert batches.process_batch(engine, bid).failed == 0
    finally:
        engine.dispose()
    return f"Meta-evaluation?batch={bid}"


def seed_nothing(url: str, fake) -> str:
    """No data: the home page, for the floor every page pays (Streamlit's own scripts in a new browser session)."""
    return ""


def _fakes():
    from tests.nli_fakes import nli_judge
    from tests.support.conseval import scorer

    return {
        "ConsEval": (scorer(noisy=True), seed_conseval),
        "DHP": (dhp_judge, seed_dhp),
        "Judges": (nli_judge(bad=" said"), seed_judges),
        "Home": (lambda body: "OK", seed_nothing),
        "Meta-evaluation": (metaeval_judge, seed_metaeval),
    }


# -- the app ----------------------------------------------------------------------------------------------
def start_app(tmp: Path, url: str, mode: str, fake) -> tuple[subprocess.Popen, str]:
    from tests.support.browser import free_port, server_flags, wait_healthy

    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(("LLM_", "OPENAI_", "STREAMLIT_"))}
    env.update(
        DATABASE_URL=url,
        CONSISTENCY_SPAWN_WORKER="0",
        DATA_DIR=str(tmp / "data"),
        CONSISTENCY_SECRETS_FILE=str(tmp / "no-secrets.toml"),
        LLM_BASE_URL=fake.base_url,
        LLM_MODEL="fake-model",
        LLM_MAX_RETRIES="1",
    )
    port = free_port()
    log = tmp / f"streamlit-{mode}.log"
    entry = ["serve.py"] if mode == "serve" else ["-m", "streamlit", "run", "app.py"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, *entry, *server_flags(port)], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    wait_healthy(f"http://127.0.0.1:{port}", proc, log, 180)
    return proc, f"http://127.0.0.1:{port}"


TITLES = {"ConsEval": "ConsEval", "DHP": "DHP", "Judges": "Judges", "Meta-evaluation": "Meta-evaluation"}
TABS = ["Inter-consistency", "Model × method", "Radar", "Humans", "Answers"]


def open_tabs(page, monitor: Monitor) -> list[tuple[str, float, float]]:
    """Click each further ConsEval tab; seconds until it settled again and the app's CPU for it."""
    from scale_pages import QUIET_S

    out = []
    for name in TABS:
        cpu0, t0 = monitor.cpu(), time.perf_counter()
        page.get_by_test_id("stMain").get_by_role("tab", name=name).click()
        last, sig = time.perf_counter(), None
        while time.perf_counter() - t0 < 120:
            busy = page.evaluate(
                """() => [document.querySelector('[data-testid="stMain"]').innerText,
                          document.querySelectorAll('[data-testid="stStatusWidget"]').length,
                          document.querySelectorAll('[data-testid="stSkeleton"], [data-testid="stSpinner"]').length]"""
            )
            s = (hash(busy[0]), busy[1], busy[2])
            now = time.perf_counter()
            if s != sig or busy[1] or busy[2]:
                last, sig = now, s
            elif now - last >= QUIET_S:
                break
            time.sleep(0.15)
        out.append((name, last - t0, monitor.cpu() - cpu0))
    return out


def print_visit(r: dict) -> None:
    print(
        f"  {r['page']:<24} {r['mode']:<9} {r['visit']:<7}  first {r['first']:5.1f} s"
        f" · settled {r['settled']:5.1f} s"
        f" · CPU {r['cpu']:5.2f} s · RSS {r['rss']:5.0f} MB · Chromium CPU {r['browser']:5.2f} s"
        f" · load {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def measure(
    name: str, mode: str, browser, tabs: bool, keep: Path | None, context_options: dict | None = None
) -> list[dict]:
    import shutil

    from tests.fakes import FakeOpenAIServer

    responder, seed = _fakes()[name]
    rows = []
    with tempfile.TemporaryDirectory(prefix="cs-small-") as d:
        tmp = Path(d)
        url = f"sqlite:///{tmp / 'app.db'}"
        fake = FakeOpenAIServer(responder).start()
        try:
            path = seed(url, fake)
            if keep is not None:  # a copy to profile (bench/profile_page.py), left as seeded
                keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(tmp / "app.db", keep / f"{name}.db")
            paths = [path] if name != "DHP" else ["DHP?view=Texts", path]
            proc, app = start_app(tmp, url, mode, fake)
            monitor = Monitor(proc.pid)
            try:
                kept = None  # the "warm" visit's browser profile, kept for the revisit
                for visit in ("cold", "warm", "revisit"):
                    for p in paths:
                        if visit == "revisit":
                            ctx = kept
                        else:
                            ctx = browser.new_context(
                                viewport={"width": 1400, "height": 2400}, **(context_options or {})
                            )
                            if visit == "warm" and kept is None:
                                kept = ctx
                        page = ctx.new_page()
                        b0 = browser_cpu()
                        r = drive(page, f"{app}/{p}", monitor)
                        r |= {"page": p or "(home)", "mode": mode, "visit": visit, "browser": browser_cpu() - b0}
                        if tabs and name == "ConsEval":
                            r["tabs"] = open_tabs(page, monitor)
                        if ctx is kept:
                            page.close()  # the profile (its HTTP cache) stays for the revisit
                        else:
                            ctx.close()
                        rows.append(r)
                        print_visit(r)
                        for tab, secs, cpu in r.get("tabs", []):
                            print(f"      tab {tab:<18} settled {secs:5.1f} s · app CPU {cpu:5.2f} s", flush=True)
                if kept is not None and name in TITLES:
                    # A reader moving on from the home page by the sidebar: the same session, Streamlit's scripts
                    # already running, only the page's script and its elements new.
                    page = kept.new_page()
                    drive(page, app, monitor)
                    b0 = browser_cpu()
                    base = paths[0].split("?")[0]
                    r = drive(page, base, monitor, title=TITLES[name])
                    r |= {"page": base, "mode": mode, "visit": "sidebar", "browser": browser_cpu() - b0}
                    rows.append(r)
                    print_visit(r)
                if kept is not None:
                    kept.close()
            finally:
                monitor.stop()
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
            log = (tmp / f"streamlit-{mode}.log").read_text(errors="replace")
            if "Traceback" in log:
                print(f"  the app logged a traceback:\n{log[-3000:]}")
        finally:
            fake.stop()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", nargs="*", default=["ConsEval", "DHP", "Judges"])
    ap.add_argument("--modes", nargs="*", default=["serve", "streamlit"])
    ap.add_argument("--tabs", action="store_true", help="also open each further ConsEval tab")
    ap.add_argument("--keep", type=Path, default=None, help="a folder to copy each seeded database into")
    ap.add_argument("--chromium-args", default="", help="more Chromium flags, beside the browser tests' own")
    ap.add_argument("--executable", type=Path, default=None, help="another Chromium binary than the tests' own")
    ap.add_argument("--reduced-motion", action="store_true", help="each session asks for reduced motion")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    table, began = [], start()
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(args.executable or CHROMIUM), args=[*CHROMIUM_ARGS, *args.chromium_args.split()]
        )
        options = {"reduced_motion": "reduce"} if args.reduced_motion else {}
        for name in args.pages:
            for mode in args.modes:
                table += measure(name, mode, browser, args.tabs, args.keep, options)
        browser.close()
    print(
        "\n| page | started by | visit | first | settled | app CPU | app peak RSS | Chromium CPU |"
        "\n|---|---|---|---|---|---|---|---|"
    )
    for r in table:
        print(
            f"| {r['page']} | {r['mode']} | {r['visit']} | {r['first']:.1f} s | {r['settled']:.1f} s | "
            f"{r['cpu']:.2f} s | {r['rss']:.0f} MB | {r['browser']:.2f} s |"
        )
    rows = [
        {
            "page": r["page"],
            "started by": r["mode"],
            "visit": r["visit"],
            "first content s": r["first"],
            "settled s": r["settled"],
            "app CPU s": r["cpu"],
            "app peak RSS MB": r["rss"],
            "Chromium CPU s": r["browser"],
        }
        for r in table
    ]
    record("pages", "pages_small", {"pages at the browser tests' sizes, headless Chromium": rows}, started=began)


if __name__ == "__main__":
    main()
