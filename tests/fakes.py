"""A scriptable OpenAI-compatible HTTP server for tests, and a toy DCR judge to drive it.

`FakeOpenAIServer` is a real server on 127.0.0.1 (stdlib `ThreadingHTTPServer`), so the app's
`openai` SDK client, its retries, timeouts and error mapping run exactly as against a real backend.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: a chat completion (status 200) or an error status with a body."""

    status: int = 200
    content: str = ""
    body: Any = None  # for status != 200: a dict (sent as JSON), a str, or None for a default error body
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    then: Reply | None = None  # what to send after `delay`
    finish_reason: str = "stop"
    usage: tuple[int, int] | None = None  # (prompt_tokens, completion_tokens); default: word counts


ReplyLike = Reply | str | dict | list


def as_reply(obj: ReplyLike) -> Reply:
    """A Reply from a Reply, a text answer (str), or a JSON answer (dict or list)."""
    if isinstance(obj, Reply):
        return obj
    if isinstance(obj, str):
        return Reply(content=obj)
    return Reply(content=json.dumps(obj))


def _words(text: str) -> int:
    return len(text.split())


class Gate:
    """Requests held at the server until the test opens the gate; the test waits for them to arrive.

    A responder calls `passes(tag)` (tag: whatever the test wants to count, such as the worker that sent
    it); the call returns once the gate is open. The test waits with `wait_for(lambda g: ..., what)` on
    `g.held` (tags of the requests waiting now) and `g.seen` (tags of every request so far), then `open()`s
    it. Nothing depends on how fast the machine is: each step waits for the event before it.
    """

    def __init__(self, limit: float | None = None) -> None:
        from tests.support.waiting import WAIT_LIMIT

        self.limit = WAIT_LIMIT if limit is None else limit
        self._cond = threading.Condition()
        self._open = False
        self.held: list[Any] = []
        self.seen: list[Any] = []

    def passes(self, tag: Any = None) -> None:
        with self._cond:
            self.seen.append(tag)
            if not self._open:
                self.held.append(tag)
                self._cond.notify_all()
                self._cond.wait_for(lambda: self._open, timeout=self.limit)
                self.held.remove(tag)
            else:
                self._cond.notify_all()

    def wait_for(self, predicate: Callable[[Gate], bool], what: str) -> None:
        """Until predicate(gate) holds; AssertionError naming `what` after the (generous) limit."""
        with self._cond:
            if not self._cond.wait_for(lambda: predicate(self), timeout=self.limit):
                raise AssertionError(f"gave up waiting: {what} (held {self.held}, seen {len(self.seen)})")

    def open(self) -> None:
        with self._cond:
            self._open = True
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._open = False


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload.encode("utf-8") if isinstance(payload, str) else json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass

    def do_GET(self) -> None:
        fake = self.server.fake
        if self.path.rstrip("/") == "/v1/models":
            self._send(
                200,
                {
                    "object": "list",
                    "data": [{"id": fake.model, "object": "model", "created": int(time.time()), "owned_by": "fake"}],
                },
            )
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}})
            return
        reply = fake._next_reply(body, dict(self.headers))
        while reply.delay > 0:
            if fake._closing.wait(reply.delay):
                return
            reply = reply.then or Reply(content="{}")
        if reply.status != 200:
            payload = reply.body
            if payload is None:
                payload = {
                    "error": {"message": f"fake error {reply.status}", "type": "server_error", "code": reply.status}
                }
            self._send(reply.status, payload, reply.headers)
            return
        prompt_text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        p_tok, c_tok = reply.usage or (_words(prompt_text), _words(reply.content))
        self._send(
            200,
            {
                "id": f"chatcmpl-fake-{fake._counter()}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", fake.model),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.content},
                        "finish_reason": reply.finish_reason,
                    }
                ],
                "usage": {"prompt_tokens": p_tok, "completion_tokens": c_tok, "total_tokens": p_tok + c_tok},
            },
            reply.headers,
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenAIServer


class FakeOpenAIServer:
    """An OpenAI-compatible chat server with a queue of scripted replies.

    Each POST /v1/chat/completions takes the next queued reply, or asks `responder(request_json)`
    when the queue is empty. Every request body is kept in `.requests` (in arrival order).
    With `reject_json_schema=True` it behaves like llama.cpp's server: any request with
    response_format.type == "json_schema" gets a 500 (without using up a queued reply), while
    {"type": "json_object", "schema": ...} is accepted.
    """

    def __init__(
        self,
        responder: Callable[[dict], ReplyLike] | None = None,
        *,
        reject_json_schema: bool = False,
        model: str = "fake-model",
    ) -> None:
        self.responder = responder
        self.reject_json_schema = reject_json_schema
        self.model = model
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._requests: list[dict] = []
        self._headers: list[dict[str, str]] = []
        self._n = 0
        self.responder_errors: list[Exception] = []
        self._closing = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------
    handler_class: type[_Handler] = _Handler  # a subclass may send faulty responses

    def start(self) -> FakeOpenAIServer:
        httpd = _Server(("127.0.0.1", 0), self.handler_class)
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ------------------------------------------------------------------------
    def enqueue(self, reply: ReplyLike) -> None:
        with self._lock:
            self._queue.append(as_reply(reply))

    def enqueue_json(self, obj: Any, **kw: Any) -> None:
        self.enqueue(Reply(content=json.dumps(obj), **kw))

    def enqueue_text(self, text: str, **kw: Any) -> None:
        self.enqueue(Reply(content=text, **kw))

    def enqueue_status(self, code: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        self.enqueue(Reply(status=code, body=body, headers=dict(headers or {})))

    def enqueue_delay(self, seconds: float, then: ReplyLike = "{}") -> None:
        self.enqueue(Reply(delay=seconds, then=as_reply(then)))

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    # -- what was asked -------------------------------------------------------------------
    @property
    def requests(self) -> list[dict]:
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        with self._lock:
            return list(self._headers)

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()
            self._headers.clear()

    # -- internals ------------------------------------------------------------------------
    def _counter(self) -> int:
        with self._lock:
            self._n += 1
            return self._n

    def _next_reply(self, body: dict, headers: dict[str, str]) -> Reply:
        with self._lock:
            self._requests.append(body)
            self._headers.append({k.lower(): v for k, v in headers.items()})
            rf = body.get("response_format") or {}
            if self.reject_json_schema and rf.get("type") == "json_schema":
                return Reply(
                    status=500,
                    body={
                        "error": {"code": 500, "message": "Unsupported response_format type", "type": "server_error"}
                    },
                )
            if self._queue:
                return self._queue.popleft()
        if self.responder is None:
            return Reply(status=500, body={"error": {"message": "fake server: no scripted reply left"}})
        try:
            return as_reply(self.responder(body))
        except Exception as exc:  # a broken test script: answer 500 and let the fixture report it
            with self._lock:
                self.responder_errors.append(exc)
            return Reply(status=500, body={"error": {"message": f"fake responder failed: {exc!r}"}})


# -- helpers for DCR scripts ---------------------------------------------------------------------
def last_user(body: dict) -> str:
    """The content of the last user message of a request body."""
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def dce(*pairs: tuple[str, str], is_consistent: bool | None = None) -> dict:
    """A Table 8 DCE answer from (sentence, reason) pairs."""
    out: dict[str, Any] = {"reason": [{"sentence": s, "reason": r} for s, r in pairs]}
    out["is_consistent"] = is_consistent if is_consistent is not None else all("not" not in r for _, r in pairs)
    return out


OK = "This sentence is consistent with the article."
BAD = "This sentence is not consistent with the article: {}."


def toy_judge(bad: str, fix: str) -> Callable[[dict], ReplyLike]:
    """A deterministic stand-in for a model: a sentence containing `bad` is inconsistent; the
    improver replaces `bad` with `fix`. Answers the DCE (Table 8) and RAI (Table 10) prompts."""
    from services.text import split_sentences

    def respond(body: dict) -> ReplyLike:
        prompt = last_user(body)
        if prompt.startswith("You are a good writer"):
            block = re.search(r"\nSentences\n\n(.*)\n\nTask\n", prompt, re.S)
            assert block, "RAI prompt without a Sentences block"
            items = json.loads(block.group(1))
            return {
                "rewrites": [
                    {
                        "sentence": it["sentence"],
                        "improved_sentence": it["sentence"].replace(bad, fix),
                        "reason": "fixed" if bad in it["sentence"] else "ALREADY CONSISTENT",
                    }
                    for it in items
                ]
            }
        block = re.search(r"\nSummary\n\n(.*)\n\nTask\n", prompt, re.S)
        assert block, "DCE prompt without a Summary block"
        sentences = split_sentences(block.group(1))
        return dce(*[(s, BAD.format(f"it says {bad}") if bad in s else OK) for s in sentences])

    return respond


CONNECTION_CHECK_PROMPT = "Reply with the word OK."


def answers_connection_check(responder: Callable[[dict], ReplyLike]) -> Callable[[dict], ReplyLike]:
    """Wrap a responder so the app's "Test connection" request (Settings) is answered "OK";
    every other request goes to `responder`. Lets one fake serve both the judge and the check."""

    def respond(body: dict) -> ReplyLike:
        if last_user(body).strip() == CONNECTION_CHECK_PROMPT:
            return Reply(content="OK")
        return responder(body)

    return respond
