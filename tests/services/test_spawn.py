"""Children started by the app outlive the (short-lived) thread that asked for them."""

import subprocess
import sys
import threading
import time

from services.embedded import spawn_child


def test_a_child_spawned_from_a_thread_that_ends_keeps_running():
    box = {}

    def script_run():  # like a Streamlit script run: the thread ends right after
        box["proc"] = spawn_child([sys.executable, "-c", "import time; time.sleep(30)"], stdout=subprocess.DEVNULL)

    t = threading.Thread(target=script_run)
    t.start()
    t.join()
    time.sleep(0.5)
    proc = box["proc"]
    try:
        assert proc.poll() is None, "the child died with the thread that spawned it"
    finally:
        proc.kill()
        proc.wait()
