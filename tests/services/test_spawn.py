"""Children started by the app outlive the (short-lived) thread that asked for them."""

import subprocess
import sys
import threading

from services.embedded import spawn_child

# Echoes each line it reads: an echo proves the child ran after the signal its parent thread's end would send.
ECHO = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()"


def test_a_child_spawned_from_a_thread_that_ends_keeps_running():
    box = {}

    def script_run():  # like a Streamlit script run: the thread ends right after
        box["proc"] = spawn_child(
            [sys.executable, "-c", ECHO], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    t = threading.Thread(target=script_run)
    t.start()
    t.join()
    proc = box["proc"]
    try:
        # A parent-death signal is pending from the moment the thread ended, so the child, once it runs again,
        # dies before it can answer: no fixed pause needed, however long the machine makes it wait.
        try:
            proc.stdin.write("still here?\n")
            proc.stdin.flush()
            answer = proc.stdout.readline()
        except BrokenPipeError:
            answer = ""
        assert answer == "still here?\n", "the child died with the thread that spawned it"
    finally:
        proc.kill()
        proc.wait()
