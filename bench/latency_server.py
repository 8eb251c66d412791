"""An OpenAI-compatible server that answers every request after a fixed latency, for throughput figures.

It plays a perfectly agreeable judge: every DCE reason says the sentence is consistent, every AMC mark
is +1, RAI keeps each sentence. Run: python bench/latency_server.py PORT [LATENCY_SECONDS]
"""

from __future__ import annotations

import json
import re
import sys
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def answer(body: dict) -> str:
    rf = body.get("response_format") or {}
    schema = rf.get("schema") or (rf.get("json_schema") or {}).get("schema") or {}
    prompt = body["messages"][-1]["content"]
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    if "answer" in props:  # AMC: one +1 per paragraph
        n = props["answer"].get("minItems") or len(re.findall(r'^\*"', prompt, flags=re.M)) or 1
        return json.dumps({"reason": ["positive"] * n, "answer": [1] * n})
    if schema.get("type") == "array":  # RAI
        n = schema.get("minItems", 1)
        return json.dumps([{"sentence": "s", "improved_sentence": "s", "reason": "ALREADY CONSISTENT"}] * n)
    n = props.get("reason", {}).get("minItems", 1) if isinstance(props.get("reason"), dict) else 1
    tag = zlib.crc32(prompt.encode()) % 100000  # distinct reasons per document, as a real judge gives
    reasons = [
        {"sentence": "", "reason": f"This sentence is consistent with the article ({tag}.{i})."} for i in range(n)
    ]
    return json.dumps({"reason": reasons, "is_consistent": True})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as real servers do; otherwise keep-alive replies wait on delayed ACKs
    latency = 0.2

    def log_message(self, *args) -> None:  # noqa: ANN002
        pass

    def do_GET(self) -> None:  # noqa: N802
        self._send({"object": "list", "data": [{"id": "latency-model", "object": "model"}]})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        time.sleep(self.latency)
        self._send(
            {
                "id": "x", "object": "chat.completion", "created": 0, "model": body.get("model", ""),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer(body)},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            }
        )  # fmt: skip

    def _send(self, payload: dict) -> None:
        out = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512


if __name__ == "__main__":
    Handler.latency = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
