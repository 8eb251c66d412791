"""Scripted raters for the demo workspace: plain rules, not language models, answering the app's own rating
prompts over an OpenAI-compatible server on 127.0.0.1 while the workspace is built.

ConsEval and DHP study how an evaluator behaves; the demo has no model to study, so these rules stand in for
one, through the same client, prompts, parsing and storage as any judge:

- `word-overlap rule` (DHP): rates a summary 1 + 4 x the share of its words found in the article. Typos and
  deleted characters make words the article does not have, so it notices them; reordered sentences keep every
  word, so it does not.
- `length rule` (DHP): rates every summary by its length alone, so it notices nothing that keeps the length.
- `brevity rule` (ConsEval): rates a response's conciseness from its word count; sampled at a temperature above
  0 it moves one step up or down on some repeats (a seeded pattern), so its self-consistency is high but not
  perfect.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OVERLAP = "word-overlap rule"
LENGTH = "length rule"
BREVITY = "brevity rule"
DHP_RATERS = (OVERLAP, LENGTH)

_WORD = re.compile(r"[a-z0-9]+")
LIKERT = ("Strongly Disagree", "Disagree", "Neutral", "Agree", "Strongly Agree")
JITTER = (0, 1, 0, -1)  # the k-th sample of a prompt at a temperature above 0 moves this many steps


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _between(prompt: str, start: str, end: str) -> str:
    head = prompt.split(start, 1)[-1]
    return head.split(end, 1)[0].strip()


def overlap_score(summary: str, article: str) -> int:
    """1 + 4 x the share of the summary's words that the article has, rounded to a whole score."""
    words = _words(summary)
    if not words:
        return 1
    known = set(_words(article))
    share = sum(w in known for w in words) / len(words)
    return max(1, min(5, round(1 + 4 * share**3)))


def length_score(summary: str) -> int:
    """A score from the summary's length alone: 5 up to 30 words, one less for every further 8."""
    return max(1, min(5, 5 - max(0, len(_words(summary)) - 30) // 8))


def rate_dhp(model: str, prompt: str) -> str:
    """A DHP rating prompt answered by the rule named `model`."""
    summary = _between(prompt, "\nSummary:\n", "\nEvaluation Score")
    article = _between(prompt, "Source Article:\n", "\nSummary:\n")
    return str(overlap_score(summary, article) if model == OVERLAP else length_score(summary))


def brevity(response: str) -> float:
    """Conciseness in [0, 1]: 1 for a reply of 15 words or fewer, 0 from 120 words on."""
    return max(0.0, min(1.0, (120 - len(_words(response))) / 105))


def rate_conseval(prompt: str, step: int) -> str:
    """A ConsEval prompt answered on its own options, `step` steps off the rule's score."""
    options = re.findall(r"Options: (.*)", prompt)[-1].strip()
    response = prompt.rsplit("Response:", 1)[-1]  # the target's response (after any few-shot examples)
    value = brevity(re.split(r"\n\s*(?:Only output|Answer:)", response, maxsplit=1)[0])
    if options.startswith("Strongly"):
        return LIKERT[max(0, min(4, round(value * 4) + step))]
    if options == "No, Yes":
        return "Yes" if value + 0.25 * step >= 0.5 else "No"
    bounds = re.match(r"(-?\d+)\s*(?:-|to)\s*(-?\d+)", options)  # "1-10", "-5 to 5"
    if bounds is None:
        return "?"
    lo, hi = int(bounds[1]), int(bounds[2])
    return str(max(lo, min(hi, lo + round(value * (hi - lo)) + step)))


class Raters:
    """Answers chat completions by the rule named in the request's model; counts each prompt's samples."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self.calls = 0

    def answer(self, body: dict[str, Any]) -> str:
        messages = body.get("messages") or [{}]
        prompt = str(messages[-1].get("content", ""))
        model = str(body.get("model", ""))
        with self._lock:
            self.calls += 1
            k = self._seen[prompt] = self._seen.get(prompt, 0) + 1
        if model in DHP_RATERS:
            return rate_dhp(model, prompt)
        if "Options:" in prompt:
            step = JITTER[k % len(JITTER)] if float(body.get("temperature") or 0) > 0 else 0
            return rate_conseval(prompt, step)
        return "OK"


def _handler(answer: Callable[[dict[str, Any]], str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: Any) -> None:  # quiet: the build logs what it does
            return

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in (*DHP_RATERS, BREVITY)]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            content = answer(body)
            if body.get("response_format"):
                key = "score"
                content = json.dumps({key: int(content) if content.lstrip("-").isdigit() else content})
            prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
            self._send(
                200,
                {
                    "id": "demo",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", ""),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                    ],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": 1,
                        "total_tokens": prompt_tokens + 1,
                    },
                },
            )

    return Handler


@contextmanager
def serving() -> Iterator[tuple[str, Raters]]:
    """The scripted raters on a free port of 127.0.0.1, for the length of the block: (base URL, raters)."""
    raters = Raters()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(raters.answer))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="demo-raters", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", raters
    finally:
        server.shutdown()
        server.server_close()
