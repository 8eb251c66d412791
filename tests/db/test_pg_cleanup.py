"""The throwaway PostgreSQL server of tests/db/pg.py never outlives the tests: ended by a signal, or killed
outright, the process that started it leaves no server running and no data folder behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.db import pg
from tests.support.waiting import WAIT_LIMIT

ROOT = Path(__file__).resolve().parents[2]
STARTER = """
import sys, threading
from tests.db import pg
cluster = pg.cluster()
print(cluster.datadir, flush=True)
threading.Event().wait()
"""

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("POSTGRES_TEST_URL")) or pg.find_bindir() is None,
    reason="the tests start no server of their own here (POSTGRES_TEST_URL, or no initdb/pg_ctl)",
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[-1][:3]


def _started() -> tuple[subprocess.Popen, Path, int]:
    """A process that starts a cluster and waits: its data folder and its server's pid."""
    proc = subprocess.Popen(
        [sys.executable, "-c", STARTER], cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    datadir = Path(proc.stdout.readline().strip())
    assert datadir.is_dir(), "the cluster started"
    server = int((datadir / "postmaster.pid").read_text().split()[0])
    assert _alive(server)
    return proc, datadir, server


def _gone(datadir: Path, server: int) -> bool:
    pause = threading.Event()
    for _ in range(int(WAIT_LIMIT / 0.1)):
        if not datadir.parent.exists() and not _alive(server):
            return True
        pause.wait(0.1)
    return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL, signal.SIGINT])
def test_the_server_is_stopped_and_its_folder_removed_however_its_starter_ends(signum):
    proc, datadir, server = _started()
    try:
        proc.send_signal(signum)
        proc.wait(WAIT_LIMIT)
        assert _gone(datadir, server), "no server left running, no data folder left behind"
    finally:
        if proc.poll() is None:
            proc.kill()
        if _alive(server):
            os.kill(server, signal.SIGKILL)
