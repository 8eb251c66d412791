"""The pages at scale, in a real browser: time to first content, time until settled, the app's peak memory and CPU.

For each size (default 1,000, 10,000 and 50,000 items) it seeds a new database with bulk inserts (the synthetic
QAGS-like dataset of bench/pages_render.py: 5-sentence summaries with worker votes, a finished batch of each method
over it: DCE with its verdicts and an RAI round, and, from bench/method_batches.py, the offline evidence checker
and the three NLI paradigms, each item's result in its method's shape; and as many History runs), starts the app
as users do (`python serve.py`, no worker), and opens each page in headless Chromium in a new session:

  Datasets (?dataset=ID); for each method's batch Batches (?batch=ID), Meta-evaluation (?batch=ID, and its Human
  agreement tab, which reads the sentences); Judges (its default judges: the evidence checker's batch, seeded last,
  and the batch before it), Reports, History.

Per page it prints
  * first content: from navigation until the page's title is drawn;
  * settled: until the page last changed (its text, Streamlit's running indicator or the app's script state, a
    spinner), once nothing has changed for QUIET_S seconds; a page still polling background work (the hourglass
    of bootstrap intervals computing in the background) is not settled;
  * app CPU: CPU seconds of the app and its child processes (the bootstrap runs in a child) over that page;
  * peak RSS: the app's process tree, the most it held at once so far (sampled every 0.2 s).
CPU seconds and memory hold on a loaded machine; the wall times do not (the line above the table gives the load).

Run: .venv/bin/python bench/scale_pages.py [SIZES ...] [--postgresql] [--boot N] [--methods dce-amc evidence ...]
     [--pages NAME ...] (names as printed, without the method)
  --postgresql  seed and serve a throwaway PostgreSQL (tests/db/pg.py) instead of a SQLite file
  --boot N      bootstrap resamples for the AUROC and other bootstrap intervals (default: the app's 1,000), to see
                what the pages cost once the bootstrap is replaced by analytic intervals
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import method_batches as mb  # noqa: E402
from record import record, start  # noqa: E402

QUIET_S = 3.0  # a page is settled once nothing on it changed for this long
# A page that polls running work (Batches every 1.5 s) changes by design: it is *drawn* once it was complete, still
# and idle for this long, between two polls (its text, no spinner or stale element, the script not running). It is
# *complete* at the first moment it was idle and unchanged over two samples (0.15 s apart): its first run over and
# drawn, whatever its later polls do. On a loaded machine a poll's run can leave no still second between two polls,
# so "drawn" then measures the polls' cadence; "complete" is when the reader has the whole page.
DRAWN_S = 1.0
PAGE_LIMIT_S = 300.0  # give up on a page that never settles
PENDING_MARKS = ("hourglass_top", "Computing 95% intervals")  # components/metaeval_views.py poll()
TICK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


# -- the app's process tree, from /proc ---------------------------------------------------------------------
def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()  # fields from the state on (the name may hold spaces)


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def browser_monitor() -> Monitor:
    """The CPU of the Chromium processes this script started: the browser's own share of a visit, which runs on
    the same cores as the app here (a reader's browser would run on their machine)."""
    return Monitor(os.getpid(), named="chrom")


def tree(root: int) -> list[int]:
    """The root and every live descendant."""
    parents: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            f = _stat(int(d))
            if f:
                parents.setdefault(int(f[1]), []).append(int(d))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(parents.get(p, []))
    return out


class Monitor:
    """Samples the app's process tree: total RSS (its peak) and CPU seconds (live processes plus reaped children).
    `named`: only the processes of the tree whose name starts so (a browser's, among this script's children)."""

    def __init__(self, pid: int, named: str | None = None) -> None:
        self.pid = pid
        self.named = named
        self.peak_rss = 0
        self.gone_cpu: dict[int, float] = {}  # last CPU seen of each process, kept when it exits
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def sample(self) -> None:
        rss = 0
        for p in tree(self.pid):
            f = _stat(p)
            if not f or self.named and not _name(p).startswith(self.named):
                continue
            self.gone_cpu[p] = (int(f[11]) + int(f[12])) / TICK  # utime + stime
            rss += int(f[21]) * PAGE_SIZE
        self.peak_rss = max(self.peak_rss, rss)

    def rss_now(self) -> int:
        """The tree's resident memory at this moment (bytes)."""
        return sum(int(f[21]) * PAGE_SIZE for p in tree(self.pid) if (f := _stat(p)))

    def cpu(self) -> float:
        self.sample()
        return sum(self.gone_cpu.values())

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            time.sleep(0.2)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


# -- seeding -----------------------------------------------------------------------------------------------
def seed(url: str, n: int, methods: tuple[str, ...] = mb.METHODS) -> dict[str, int]:
    """The dataset, a finished batch of each method over it (the evidence checker's last, so the Judges page
    shows it by default) and n History runs; returns the ids ("dataset", and each method's batch)."""
    import random

    import pages_render as pr
    from sqlalchemy import select

    from db.models import Batch, utcnow
    from services.database import get_engine

    rng, now = random.Random(0), utcnow()
    ids: dict[str, int] = {}
    with get_engine(url).begin() as conn:
        pr.seed_documents(conn, n, now)
        ds_id, items, truth = pr.seed_dataset(conn, n, now, rng)
        ids["dataset"] = ds_id
        item_ids = list(range(1, n + 1))  # a new database: the dataset's items are 1..n, in order
        for method in sorted(methods, key=lambda m: m == "evidence"):
            if method == "dce-amc":
                ids[method], _ = pr.seed_batch(conn, ds_id, items, truth, now, rng)
            else:
                ids[method] = mb.seed_method_batch(conn, method, ds_id, items, truth, item_ids, now, rng)
        pr.seed_history(conn, n, now)
        for method in methods:
            assert conn.execute(select(Batch.dataset_id).where(Batch.id == ids[method])).scalar_one() == ds_id
    return ids


# -- the app and the browser ---------------------------------------------------------------------------------
def start_app(tmp: Path, url: str, boot: int | None) -> tuple[subprocess.Popen, str]:
    from tests.support.browser import free_port, server_flags, wait_healthy

    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(("LLM_", "OPENAI_", "STREAMLIT_"))}
    env.update(
        DATABASE_URL=url,
        CONSISTENCY_SPAWN_WORKER="0",
        DATA_DIR=str(tmp / "data"),
        CONSISTENCY_SECRETS_FILE=str(tmp / "no-secrets.toml"),
        PYTHONPATH=str(ROOT),
    )
    if boot is not None:
        env["BENCH_BOOT"] = str(boot)
        env["PYTHONPATH"] = f"{boot_cap_dir(tmp)}{os.pathsep}{ROOT}"
    port = free_port()
    log = tmp / "streamlit.log"
    cmd = [sys.executable, "serve.py", *server_flags(port)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    app = f"http://127.0.0.1:{port}"
    wait_healthy(app, proc, log, 120)
    return proc, app


CAP_BOOTSTRAP = """
import functools, inspect, os


def _cap(boot):
    import services.stats as pkg

    for mod_name in ("classification", "correlation", "agreement"):
        mod = __import__(f"services.stats.{mod_name}", fromlist=["x"])
        for name, fn in list(vars(mod).items()):
            if not inspect.isfunction(fn) or "n_boot" not in inspect.signature(fn).parameters:
                continue

            @functools.wraps(fn)
            def capped(*a, _fn=fn, _sig=inspect.signature(fn), **kw):
                bound = _sig.bind(*a, **kw)
                bound.apply_defaults()
                bound.arguments["n_boot"] = min(int(bound.arguments["n_boot"]), boot)
                return _fn(*bound.args, **bound.kwargs)

            setattr(mod, name, capped)
            if getattr(pkg, name, None) is fn:
                setattr(pkg, name, capped)


if os.environ.get("BENCH_BOOT"):
    _cap(int(os.environ["BENCH_BOOT"]))
"""


def boot_cap_dir(tmp: Path) -> Path:
    """A sitecustomize.py that caps every bootstrap's resamples at $BENCH_BOOT in each Python process of the app,
    the child that computes intervals included (it is spawned: it imports the statistics afresh)."""
    d = tmp / "boot-cap"
    d.mkdir(exist_ok=True)
    (d / "sitecustomize.py").write_text(CAP_BOOTSTRAP)
    return d


def drive(
    page,
    url: str,
    monitor: Monitor,
    *,
    until_drawn: bool = False,
    title: str | None = None,
    browser: Monitor | None = None,
) -> dict[str, float]:
    """Open one page in a new session; first content, drawn, settled, CPU over it and the tree's peak RSS so far.

    `until_drawn`: return once the page is drawn (a page polling a running batch may never stay still for
    QUIET_S); its "settled" is then None. `title`: go there within the page's session instead, as a reader does,
    by the sidebar's link whose address ends in `url`, and take first content as the title reading `title`
    (Streamlit's own scripts stay loaded: only the page's script runs and its elements are drawn). `browser`: a
    browser_monitor(), whose CPU over the visit comes back as "browser_cpu"."""
    cpu0 = monitor.cpu()
    browser0 = browser.cpu() if browser is not None else 0.0
    t0 = time.perf_counter()
    if title is None:
        page.goto(url, wait_until="commit")
        page.locator('[data-testid="stMain"] h1').first.wait_for(state="visible", timeout=PAGE_LIMIT_S * 1000)
    else:
        link = f'[data-testid="stSidebar"] a[href="{url}"], [data-testid="stSidebar"] a[href$="/{url}"]'
        page.locator(link).first.click(timeout=PAGE_LIMIT_S * 1000)
        page.locator('[data-testid="stMain"] h1').filter(has_text=title).first.wait_for(
            state="visible", timeout=PAGE_LIMIT_S * 1000
        )
    first = time.perf_counter() - t0
    last_change, last_sig = time.perf_counter(), None
    drawn = complete = None
    while time.perf_counter() - t0 < PAGE_LIMIT_S:
        busy = page.evaluate(
            """() => {
                const main = document.querySelector('[data-testid="stMain"]');
                const status = document.querySelector('[data-testid="stStatusWidget"]');
                const spin = document.querySelectorAll('[data-testid="stSpinner"], [data-testid="stSkeleton"]');
                const stale = document.querySelectorAll('[data-stale="true"]');
                // the running indicator exists only while a script runs (it may hold no text: count it); it
                // is not always drawn (the toolbar of a headless page), so the app's script state counts too
                const app = document.querySelector('[data-testid="stApp"]');
                const running = app && app.getAttribute("data-test-script-state") === "running" ? 1 : 0;
                return [main ? main.innerText : "", status || running ? 1 : 0, spin.length, stale.length];
            }"""
        )
        sig = (hash(busy[0]), busy[1], busy[2], busy[3])
        # Background work the page polls for (bootstrap intervals) shows an hourglass until it is in.
        pending = any(mark in busy[0] for mark in PENDING_MARKS)
        now = time.perf_counter()
        idle = not (busy[1] or busy[2] or busy[3] or pending)
        if complete is None and idle and sig == last_sig:
            complete = last_change - t0  # the first run over and drawn: idle and unchanged since that sample
        if sig != last_sig or not idle:
            last_change, last_sig = now, sig
        else:
            if drawn is None and now - last_change >= DRAWN_S:
                drawn = last_change - t0
                if until_drawn:
                    break
            if now - last_change >= QUIET_S:
                break
        time.sleep(0.15)
    settled = None if until_drawn and drawn is not None else last_change - t0
    return {
        "first": first,
        "drawn": drawn if drawn is not None else last_change - t0,
        "complete": complete if complete is not None else last_change - t0,
        "settled": settled,
        "cpu": monitor.cpu() - cpu0,
        "rss": monitor.peak_rss / 2**20,
        "browser_cpu": browser.cpu() - browser0 if browser is not None else float("nan"),
    }


PAGES = [
    ("Datasets", "Datasets?dataset={dataset}"),
    ("Batches", "Batches?batch={batch}"),
    ("Meta-evaluation", "Meta-evaluation?batch={batch}"),
    ("Meta-evaluation: Human agreement", "Meta-evaluation?batch={batch}&me_tab=Human+agreement"),
    ("Judges", "Judges"),
    ("Reports", "Reports"),
    ("History", "History"),
]
PER_METHOD = {"Batches", "Meta-evaluation", "Meta-evaluation: Human agreement"}  # visited for each method's batch


def visits(ids: dict[str, int], methods: tuple[str, ...]) -> list[tuple[str, str]]:
    """(name, path) of every visit: the pages about one batch once for each method's, the others once."""
    out = []
    for name, path in PAGES:
        if name in PER_METHOD:
            out += [(f"{name} [{m}]", path.format(batch=ids[m], **ids)) for m in methods]
        else:
            out.append((name, path.format(batch=ids[methods[0]], **ids)))
    return out


def run_size(
    n: int,
    url: str,
    tmp: Path,
    boot: int | None,
    browser,
    only: list[str] | None = None,
    dump: str | None = None,
    methods: tuple[str, ...] = mb.METHODS,
) -> list[tuple[str, dict[str, float]]]:
    t = time.perf_counter()
    ids = seed(url, n, methods)
    print(f"\n{n:,} items: seeded in {time.perf_counter() - t:.0f} s", flush=True)
    proc, app = start_app(tmp, url, boot)
    monitor = Monitor(proc.pid)
    rows = []
    try:
        ctx = browser.new_context(viewport={"width": 1400, "height": 1400})
        warm = ctx.new_page()
        for path in ("", "Datasets"):  # the server's imports, once per process (no dataset open: no data read)
            drive(warm, f"{app}/{path}", monitor)
        ctx.close()
        for name, path in visits(ids, methods):
            if only and name.split(" [")[0] not in only:
                continue
            ctx = browser.new_context(viewport={"width": 1400, "height": 1400})
            page = ctx.new_page()
            r = drive(page, f"{app}/{path}", monitor)
            if dump:
                Path(dump).mkdir(parents=True, exist_ok=True)
                Path(dump, f"{n}-{name}.txt").write_text(page.locator('[data-testid="stMain"]').inner_text())
            ctx.close()
            r["after"] = monitor.rss_now() / 2**20  # the app once the page is settled and its tab closed
            rows.append((name, r))
            print(
                f"  {name:<45} first content {r['first']:5.1f} s · settled {r['settled']:5.1f} s · app CPU "
                f"{r['cpu']:5.1f} s · app peak RSS {r['rss']:6.0f} MB · after {r['after']:6.0f} MB",
                flush=True,
            )
    finally:
        monitor.stop()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
    log = (tmp / "streamlit.log").read_text(errors="replace")
    if "Traceback" in log:
        print(f"  the app logged a traceback:\n{log[-3000:]}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[1000, 10_000, 50_000])
    ap.add_argument("--postgresql", action="store_true")
    ap.add_argument("--boot", type=int, default=None)
    ap.add_argument("--pages", nargs="*", default=None, help="only these pages (names as printed)")
    ap.add_argument("--dump", default=None, help="a folder to write each page's text into once settled")
    ap.add_argument("--methods", nargs="*", default=list(mb.METHODS), choices=mb.METHODS, help="batches to seed")
    args = ap.parse_args()
    methods = tuple(args.methods)
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

    boot = args.boot or "the app's default"
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; bootstrap resamples: {boot}")
    table, began = [], start()
    with ExitStack() as stack, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        for n in args.sizes:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cs-scale-")))
            if args.postgresql:
                from tests.db.pg import cluster, stop_cluster

                url = cluster().new_database("scale")
                stack.callback(stop_cluster)
            else:
                url = f"sqlite:///{tmp}/scale.db"
            table.append((n, run_size(n, url, tmp, args.boot, browser, args.pages, args.dump, methods)))
        browser.close()
    names = list(dict.fromkeys(name for _, rows in table for name, _ in rows))
    print("\n| page | " + " | ".join(f"{n:,}: first / settled / CPU / peak RSS / after" for n, _ in table) + " |")
    print("|---|" + "---|" * len(table))
    for name in names:
        cells = []
        for _, rows in table:
            r = dict(rows).get(name)
            cells.append(
                ""
                if r is None
                else f"{r['first']:.1f} s / {r['settled']:.1f} s / {r['cpu']:.1f} s / "
                f"{r['rss']:.0f} MB / {r['after']:.0f} MB"
            )
        print(f"| {name} | " + " | ".join(cells) + " |")
    rows = [
        {
            "page": name,
            "items": n,
            "first content s": r["first"],
            "settled s": r["settled"],
            "app CPU s": r["cpu"],
            "app peak RSS MB": r["rss"],
            "app RSS after MB": r["after"],
        }
        for n, size_rows in table
        for name, r in size_rows
    ]
    database = "PostgreSQL" if args.postgresql else "SQLite"
    label = f"pages in headless Chromium, {database}"
    plots = [
        {"table": label, "x": "items", "y": [y], "group": "page", "title": f"{y} against items"}
        for y in ("settled s", "app CPU s")
    ]
    record("pages", "scale_pages", {label: rows}, started=began, plot=plots if len(table) > 1 else None)


if __name__ == "__main__":
    main()
