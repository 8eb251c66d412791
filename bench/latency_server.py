"""An OpenAI-compatible server that answers every request after a fixed latency, for throughput figures.

It plays a perfectly agreeable judge: every DCE reason says the sentence is consistent, every AMC mark
is +1, RAI keeps each sentence. It is an asyncio server, like the servers it stands for (vLLM,
llama.cpp, uvicorn): a thread per connection would add delays of its own to the figure.
Run: python bench/latency_server.py PORT [LATENCY_SECONDS] [FIRST_REQUEST_FILE]
(the file, when given, receives the wall-clock time of the first model request: a client's start-up ends there).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
import zlib

FIRST_REQUEST_FILE = sys.argv[3] if len(sys.argv) > 3 else None
# LATENCY_QUOTE=1: each reason quotes its sentence of the candidate, as real judges do (the client then aligns
# quotes to sentences, which it skips for empty quotes)
QUOTE = os.environ.get("LATENCY_QUOTE") == "1"
_CANDIDATE = re.compile(r"\n(?:Summary|Candidate|Response|Text)\n\n(.*?)\n\n", re.S)


def _candidate_sentences(prompt: str) -> list[str]:
    m = _CANDIDATE.search(prompt)
    return [s for s in re.split(r"(?<=[.!?])\s+", m.group(1).strip())] if m else []


_first_seen = False


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
    quotes = _candidate_sentences(prompt) if QUOTE else []
    reasons = [
        {
            "sentence": quotes[i] if i < len(quotes) else "",
            "reason": f"This sentence is consistent with the article ({tag}.{i}).",
        }
        for i in range(n)
    ]
    return json.dumps({"reason": reasons, "is_consistent": True})


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float) -> None:
    """HTTP/1.1 with keep-alive: enough of it for the OpenAI SDK, with no per-connection thread."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
            body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
            if method == "POST":
                _mark_first_request()
                req = json.loads(body)
                await asyncio.sleep(latency)
                payload = {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": req.get("model", ""),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": answer(req)}, "finish_reason": "stop"}
                    ],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
                }
            else:
                payload = {"object": "list", "data": [{"id": "latency-model", "object": "model"}]}
            out = json.dumps(payload).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                + str(len(out)).encode()
                + b"\r\n\r\n"
                + out
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError):
        pass
    finally:
        writer.close()


def _mark_first_request() -> None:
    global _first_seen
    if FIRST_REQUEST_FILE and not _first_seen:
        _first_seen = True
        with open(FIRST_REQUEST_FILE, "w", encoding="utf-8") as f:
            f.write(repr(time.time()))


async def serve(port: int, latency: float) -> None:
    server = await asyncio.start_server(lambda r, w: handle(r, w, latency), "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 0.2))
