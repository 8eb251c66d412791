"""The one LLM seam: `get_client` builds every client, and every model call goes through
`LLMClient.chat_json` (or `chat_text` for a plain reply); answers are remembered in a `ResponseCache`."""

from __future__ import annotations

import copy
import functools
import hashlib
import itertools
import json
import logging
import ssl
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import json_repair
import openai
from pydantic import ValidationError

from services.config import BackendConfig
from services.redact import REDACTED, redact_url, url_secrets

log = logging.getLogger(__name__)

T = TypeVar("T")

# Ways of asking for JSON, strongest first. llama.cpp's server answers 500 to json_schema but
# constrains output with {"type": "json_object", "schema": ...}; OpenAI takes json_schema.
MODES = ("json_schema", "json_object_schema", "json_object", "text")

SDK_THREADS_PER_CLIENT = 8

RETRY_PROMPT = (
    "Your previous answer could not be read as the JSON format requested ({problem}). "
    "Reply again with only the JSON, nothing before or after it."
)


class ResponseCache(ABC):
    """Where model answers are remembered, under `cache_key`; the first answer stored under a key is kept.

    Implementations: `MemoryCache` (a process's dictionary), `db.cache.SqlCache` (the app database) and
    `db.cache.BufferedSqlCache` (the app database for a batch: writes flushed in bulk by one writer).
    A payload is `{"raw": ..., "prompt_tokens": ..., "completion_tokens": ...}`.
    """

    @abstractmethod
    def get(self, key: str) -> dict[str, Any] | None:
        """The payload stored under `key`, or None."""

    @abstractmethod
    def put(self, key: str, *, model: str, prompt_version: str, payload: dict[str, Any]) -> None:
        """Store a payload under `key`, unless one is stored there already."""


class MemoryCache(ResponseCache):
    """Answers kept in memory for the life of the object; safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.entries: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            entry = self.entries.get(key)
        return dict(entry["payload"]) if entry is not None else None

    def put(self, key: str, *, model: str, prompt_version: str, payload: dict[str, Any]) -> None:
        with self._lock:
            self.entries.setdefault(key, {"model": model, "prompt_version": prompt_version, "payload": dict(payload)})


@dataclass
class CallRecord:
    """One logical call: a cache hit, or one or more requests to the server."""

    stage: str
    prompt_version: str
    cached: bool
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    error: str | None = None


class UsageLedger:
    """Calls, tokens, latency and cache hits of one run; safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: list[CallRecord] = []

    def add(self, record: CallRecord) -> None:
        with self._lock:
            self.records.append(record)

    def summary(self) -> dict[str, Any]:
        with self._lock:
            recs = list(self.records)
        return summarize_records(recs)


def summarize_records(recs: list[CallRecord]) -> dict[str, Any]:
    """Totals over call records; `calls` counts requests actually sent to the model."""
    return {
        "calls": sum(r.requests for r in recs),
        "cache_hits": sum(1 for r in recs if r.cached),
        "prompt_tokens": sum(r.prompt_tokens for r in recs),
        "completion_tokens": sum(r.completion_tokens for r in recs),
        "latency_s": round(sum(r.latency_ms for r in recs) / 1000, 2),
        "errors": sum(1 for r in recs if r.error),
    }


@dataclass
class CallResult(Generic[T]):
    """What a call gave: a parsed value, or an error that says what went wrong."""

    value: T | None
    raw: str = ""
    error: str | None = None
    cached: bool = False
    fatal: bool = False  # the backend itself failed (unreachable, bad key): stop the run

    @property
    def ok(self) -> bool:
        return self.error is None and self.value is not None


@dataclass
class _Reply:
    raw: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None


class BackendError(Exception):
    """A request failed for a reason the user must act on; `fatal` stops the run."""

    def __init__(self, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.fatal = fatal


_mode_memory: dict[tuple[str, str], str] = {}
_mode_lock = threading.Lock()


def cache_key(model: str, prompt_version: str, messages: list[dict], params: dict, sample: int) -> str:
    """Stable key over everything that decides an answer."""
    blob = json.dumps(
        {"model": model, "prompt": prompt_version, "messages": messages, "params": params, "sample": sample},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def loads_lenient(raw: str) -> Any:
    """Parse JSON; on failure repair it with json_repair (code fences, trailing prose, bad quotes)."""
    text = raw.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    value = json_repair.loads(text)
    if value in ("", None):
        raise ValueError("no JSON found in the answer")
    return value


def is_cut_off(raw: str) -> bool:
    """True when the answer's first JSON value opens a string, object or array it never closes."""
    text = raw.strip()
    try:
        json.loads(text)
        return False
    except ValueError:
        pass
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return False
    depth, in_string, escaped = 0, False, False
    for ch in text[min(starts) :]:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return False  # the value is whole; anything after it is prose
    return True


def describe_error(exc: Exception, backend: BackendConfig, base_url: str) -> BackendError:
    """Turn an SDK exception into a message a user can act on (never with credentials from the URL)."""
    err = _describe_error(exc, backend, base_url)
    message = str(err)
    for secret in url_secrets(backend.base_url):
        message = message.replace(secret, REDACTED)
    return err if message == str(err) else BackendError(message, fatal=err.fatal)


def _describe_error(exc: Exception, backend: BackendConfig, base_url: str) -> BackendError:
    if isinstance(exc, openai.APITimeoutError):
        return BackendError(f"No answer from {base_url} within {backend.timeout:g} s (timeout).")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        if "complete message body" in str(cause):  # the server answered, but the body stopped short
            return BackendError(f"The answer from {base_url} was cut short on the way ({cause}).")
        return BackendError(f"Cannot reach {base_url}: {cause}. Is the server running?", fatal=True)
    if isinstance(exc, openai.AuthenticationError):
        return BackendError(
            f"{base_url} rejected the API key (401). Check LLM_API_KEY / OPENAI_API_KEY or the key typed in Settings.",
            fatal=True,
        )
    if isinstance(exc, openai.PermissionDeniedError):
        return BackendError(f"{base_url} refused access (403): {_body(exc)}", fatal=True)
    if isinstance(exc, openai.NotFoundError):
        return BackendError(
            f"{base_url} answered 404: model '{backend.model}' or the endpoint does not exist ({_body(exc)}).",
            fatal=True,
        )
    if isinstance(exc, openai.RateLimitError):
        return BackendError(f"Rate limited by {base_url} (429) after {backend.max_retries} retries.")
    if isinstance(exc, openai.APIStatusError):
        return BackendError(f"{base_url} answered {exc.status_code}: {_body(exc)}")
    return BackendError(f"{type(exc).__name__}: {exc}")


def _body(exc: openai.APIStatusError) -> str:
    try:
        msg = exc.body.get("error", {}).get("message") if isinstance(exc.body, dict) else None
    except AttributeError:
        msg = None
    return str(msg or exc.message)[:300]


class LLMClient:
    """OpenAI-compatible chat client with structured output, retries, a cache and a usage ledger.

    Built by `get_client`, which sets the cache, ledger, check before sending and sample index.
    """

    def __init__(self, backend: BackendConfig, *, base_url: str | None = None) -> None:
        self.backend = backend
        self.cache: ResponseCache | None = None
        self.ledger = UsageLedger()
        self.before_send: Callable[[], None] | None = None
        self.sample = 0
        self._base_url = base_url
        self._sdks: list[openai.OpenAI] | None = None
        self._shard = threading.local()
        self._next_shard = itertools.count()
        self._sem = threading.BoundedSemaphore(max(1, backend.concurrency))
        self._sdk_lock = threading.Lock()
        self._sent = threading.local()  # HTTP requests sent by this thread's current attempt

    def _count_request(self, _request: Any) -> None:
        self._sent.n = getattr(self._sent, "n", 0) + 1

    def fork(self, ledger: UsageLedger) -> LLMClient:
        """The same client (connection pool, cache, concurrency limit) recording into another ledger."""
        self.sdk()  # build the shared SDK client once, before copies are taken
        twin = copy.copy(self)
        twin.ledger = ledger
        return twin

    # -- plumbing ---------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self._base_url is None:
            if self.backend.is_embedded:
                from services.embedded import get_embedded_server

                self._base_url = get_embedded_server().base_url
            else:
                self._base_url = (self.backend.base_url or "").rstrip("/")
        return self._base_url

    @property
    def public_url(self) -> str:
        """The base URL as messages may show it (no credentials)."""
        return redact_url(self.base_url) or ""

    def sdk(self) -> openai.OpenAI:
        """The SDK client of this thread. Threads are spread over several clients, because one HTTP
        connection pool shared by dozens of threads spends its time waiting on the pool's lock."""
        shards = self._sdks
        if shards is None:
            with self._sdk_lock:
                if self._sdks is None:
                    n = max(1, -(-self.backend.concurrency // SDK_THREADS_PER_CLIENT))
                    self._sdks = [self._new_sdk() for _ in range(n)]
                shards = self._sdks
        if len(shards) == 1:
            return shards[0]
        idx = getattr(self._shard, "i", None)
        if idx is None:
            idx = self._shard.i = next(self._next_shard) % len(shards)
        return shards[idx]

    def _new_sdk(self) -> openai.OpenAI:
        key = self.backend.api_key.get_secret_value() if self.backend.api_key else ""
        return openai.OpenAI(
            base_url=self.base_url,
            api_key=key or "not-needed",
            timeout=openai.Timeout(self.backend.timeout, connect=min(10.0, self.backend.timeout)),
            max_retries=self.backend.max_retries,
            # counts every HTTP request, including the SDK's own retries, for the usage ledger
            http_client=openai.DefaultHttpxClient(
                # plain-HTTP servers (local vLLM, Ollama, llama.cpp) need no TLS context at all
                verify=_ssl_context() if self.base_url.startswith("https") else False,
                event_hooks={"request": [self._count_request]},
            ),
        )

    def _mode_key(self) -> tuple[str, str]:
        return (self.base_url, self.backend.model)

    def _known_mode(self) -> str | None:
        with _mode_lock:
            return _mode_memory.get(self._mode_key())

    def _start_mode(self) -> str:
        known = self._known_mode()
        if known:
            return known
        return "json_object_schema" if self.backend.is_embedded else "json_schema"

    def _remember_mode(self, mode: str) -> None:
        with _mode_lock:
            _mode_memory[self._mode_key()] = mode

    def _request(
        self, messages: list[dict], schema: dict | None, mode: str, temperature: float, probe: bool = False
    ) -> _Reply:
        kwargs: dict[str, Any] = {
            "model": self.backend.model,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": self.backend.max_tokens,
        }
        if schema is not None and mode == "json_schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": False},
            }
        elif schema is not None and mode == "json_object_schema":
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        elif mode == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        with self._sem:
            if self.before_send is not None:
                self.before_send()
            resp = None
            try:
                if probe:
                    # A first json_schema request probes support without SDK retries: llama.cpp answers 500
                    # to it, which the SDK would otherwise retry with backoff. Rate limits and network
                    # trouble are not an answer about support: those go on to the normal, retried request.
                    try:
                        resp = self._post(self.sdk().with_options(max_retries=0), kwargs)
                    except openai.APITimeoutError:
                        raise
                    except openai.RateLimitError as exc:
                        time.sleep(_retry_after(exc))
                    except openai.APIConnectionError:
                        pass
                if resp is None:
                    resp = self._post(self.sdk(), kwargs)
            except ValueError as exc:  # the body is not JSON: cut short on the way, or not an API server
                raise BackendError(
                    f"The answer from {self.public_url} is not readable JSON ({exc}); the response was cut short "
                    "or the server is not an OpenAI-compatible API."
                ) from None
        choices = resp.get("choices") if isinstance(resp, dict) else None
        if not choices:
            raise BackendError("The server returned no choices.")
        choice = choices[0] or {}
        usage = resp.get("usage") or {}
        return _Reply(
            raw=(choice.get("message") or {}).get("content") or "",
            prompt_tokens=usage.get("prompt_tokens") or 0,
            completion_tokens=usage.get("completion_tokens") or 0,
            finish_reason=choice.get("finish_reason"),
        )

    @staticmethod
    def _post(sdk: openai.OpenAI, body: dict[str, Any]) -> Any:
        # The SDK's own request path (auth, retries with Retry-After, timeouts, typed errors), without
        # building typed request and response models: half the CPU per call, which matters at 64 in flight.
        return sdk.post("/chat/completions", body=body, cast_to=object)

    def _request_with_fallback(
        self, messages: list[dict], schema: dict | None, temperature: float, rec: CallRecord
    ) -> _Reply:
        known = self._known_mode()
        modes = list(MODES[MODES.index(self._start_mode()) :]) if schema is not None else ["text"]
        last: BackendError | None = None
        for i, mode in enumerate(modes):
            self._sent.n = 0
            probe = schema is not None and known is None and mode == "json_schema"
            try:
                reply = self._request(messages, schema, mode, temperature, probe=probe)
            except (openai.BadRequestError, openai.UnprocessableEntityError, openai.InternalServerError) as exc:
                last = describe_error(exc, self.backend, self.public_url)
                # A 500 means "unsupported" only for the json_schema probe; elsewhere it is a failing server.
                unsupported = not isinstance(exc, openai.InternalServerError) or probe
                if mode == "text" or i == len(modes) - 1 or not unsupported:
                    raise last from exc
                log.info("server refused response_format=%s (%s); trying the next mode", mode, exc)
                continue
            except openai.OpenAIError as exc:
                raise describe_error(exc, self.backend, self.public_url) from exc
            finally:
                rec.requests += self._sent.n
            if schema is not None:
                self._remember_mode(mode)
            return reply
        raise last or BackendError("no request mode worked")

    # -- the public call --------------------------------------------------------------------
    def chat_json(
        self,
        messages: list[dict],
        *,
        parse: Callable[[Any], T],
        schema: dict | None,
        prompt_version: str,
        stage: str,
        sample_index: int = 0,
        temperature: float | None = None,
    ) -> CallResult[T]:
        """Ask for JSON, parse it with `parse` (raises on a bad shape), repair or ask once more."""
        temp = self.backend.temperature if temperature is None else temperature
        key = self._key(messages, prompt_version, {"temperature": temp}, sample_index or self.sample)
        rec = CallRecord(stage=stage, prompt_version=prompt_version, cached=False)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None and not is_cut_off(hit["raw"]):
                try:
                    value = parse(loads_lenient(hit["raw"]))
                    rec.cached = True
                    self.ledger.add(rec)
                    return CallResult(value=value, raw=hit["raw"], cached=True)
                except (ValueError, ValidationError, TypeError, KeyError):
                    pass  # a stale entry that no longer parses: ask again
        return self._send(lambda: self._call_and_parse(messages, parse, schema, temp, rec), rec, key, prompt_version)

    def _send(self, call: Callable[[], CallResult[T]], rec: CallRecord, key: str, prompt_version: str) -> CallResult[T]:
        """Make the call, record its latency and error in the ledger, and cache only a good answer."""
        started = time.perf_counter()
        try:
            result = call()
        except BackendError as exc:
            rec.error = str(exc)
            result = CallResult(value=None, error=str(exc), fatal=exc.fatal)
        rec.latency_ms = (time.perf_counter() - started) * 1000
        if result.error and not rec.error:
            rec.error = result.error
        self.ledger.add(rec)
        if result.ok:
            self._store(key, prompt_version, result.raw, rec)
        return result

    def _key(self, messages: list[dict], prompt_version: str, params: dict, sample_index: int) -> str:
        params = {**params, "max_tokens": self.backend.max_tokens}
        # Two servers may serve different models under one name; the embedded server's port changes per start.
        model_id = self.backend.model if self.backend.is_embedded else f"{self.backend.public_url}|{self.backend.model}"
        return cache_key(model_id, prompt_version, messages, params, sample_index)

    def _store(self, key: str, prompt_version: str, raw: str, rec: CallRecord) -> None:
        if self.cache is not None:
            payload = {"raw": raw, "prompt_tokens": rec.prompt_tokens, "completion_tokens": rec.completion_tokens}
            self.cache.put(key, model=self.backend.model, prompt_version=prompt_version, payload=payload)

    def _call_and_parse(
        self, messages: list[dict], parse: Callable[[Any], T], schema: dict | None, temp: float, rec: CallRecord
    ) -> CallResult[T]:
        reply = self._request_with_fallback(messages, schema, temp, rec)
        rec.prompt_tokens += reply.prompt_tokens
        rec.completion_tokens += reply.completion_tokens
        # A cut-off answer is never used, even when a repair could make it parse: the repair would drop
        # whatever the model had still to say.
        cut = self._cut_reason(reply)
        value, problem = (None, cut) if cut else _try_parse(reply.raw, parse)
        if problem is None:
            return CallResult(value=value, raw=reply.raw)
        retry_msgs = [
            *messages,
            {"role": "assistant", "content": reply.raw},
            {"role": "user", "content": RETRY_PROMPT.format(problem=problem)},
        ]
        second = self._request_with_fallback(retry_msgs, schema, temp, rec)
        rec.prompt_tokens += second.prompt_tokens
        rec.completion_tokens += second.completion_tokens
        cut = self._cut_reason(second)
        value, problem2 = (None, cut) if cut else _try_parse(second.raw, parse)
        if problem2 is None:
            return CallResult(value=value, raw=second.raw)
        if cut:
            error = (
                f"The model's answer was cut off, twice ({cut}), so it is not used. Raise the max tokens "
                "(Settings, or LLM_MAX_TOKENS) if the answers need more room."
            )
        else:
            error = f"The model's answer could not be read, twice: {problem2}. Answer began: {second.raw[:160]!r}"
        return CallResult(value=None, raw=second.raw, error=error)

    def _cut_reason(self, reply: _Reply) -> str | None:
        """Why the answer is incomplete (the server stopped it at max_tokens, or its JSON breaks off)."""
        if reply.finish_reason == "length":
            return self._length_cut()
        if is_cut_off(reply.raw):
            return "the answer breaks off before its JSON is closed"
        return None

    def _length_cut(self) -> str:
        return f"the answer was cut at max_tokens={self.backend.max_tokens}"

    def chat_text(
        self,
        messages: list[dict],
        *,
        prompt_version: str,
        stage: str,
        sample_index: int = 0,
        temperature: float | None = None,
    ) -> CallResult[str]:
        """Ask once with no response format and return the reply as written (the caller reads it)."""
        temp = self.backend.temperature if temperature is None else temperature
        key = self._key(messages, prompt_version, {"temperature": temp, "format": "text"}, sample_index or self.sample)
        rec = CallRecord(stage=stage, prompt_version=prompt_version, cached=False)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            rec.cached = True
            self.ledger.add(rec)
            return CallResult(value=hit["raw"], raw=hit["raw"], cached=True)

        def call() -> CallResult[str]:
            reply = self._request_with_fallback(messages, None, temp, rec)
            rec.prompt_tokens, rec.completion_tokens = reply.prompt_tokens, reply.completion_tokens
            if reply.finish_reason == "length":  # a cut-off answer is a failure, never cached
                return CallResult(
                    value=None, raw=reply.raw, error=f"The model's answer is incomplete: {self._length_cut()}."
                )
            return CallResult(value=reply.raw, raw=reply.raw)

        return self._send(call, rec, key, prompt_version)

    def test_connection(self) -> tuple[bool, str]:
        """A one-token round trip; returns (ok, message)."""
        started = time.perf_counter()
        try:
            base = self.base_url
        except Exception as exc:  # the embedded server could not start
            return False, str(exc)
        try:
            resp = self.sdk().chat.completions.create(
                model=self.backend.model,
                messages=[{"role": "user", "content": "Reply with the word OK."}],
                max_tokens=5,
                temperature=0,
            )
        except openai.OpenAIError as exc:
            return False, str(describe_error(exc, self.backend, redact_url(base)))
        ms = (time.perf_counter() - started) * 1000
        text = (resp.choices[0].message.content or "").strip() if resp.choices else ""
        return (
            True,
            f"Connected to {redact_url(base)}: model '{resp.model or self.backend.model}' answered {text!r} "
            f"in {ms:.0f} ms.",
        )


def get_client(
    backend: BackendConfig,
    *,
    cache: ResponseCache | None = None,
    ledger: UsageLedger | None = None,
    before_send: Callable[[], None] | None = None,
    sample: int = 0,
    base_url: str | None = None,
) -> LLMClient:
    """The one way to build a model client.

    `cache` remembers answers (None: every call asks the model); `ledger` records usage (a new one if
    None); `before_send` is called before every request and may raise to stop it (a batch worker that
    lost its item); `sample` is the sample index of calls that give none (a repeated batch asks the
    model again instead of reading the cache); `base_url` overrides the backend's (a test's server
    standing in for the embedded one).
    """
    client = LLMClient(backend, base_url=base_url)
    client.cache, client.before_send, client.sample = cache, before_send, sample
    if ledger is not None:
        client.ledger = ledger
    return client


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """One TLS context for every client: building one loads the CA bundle (tens of milliseconds)."""
    try:
        import httpx2  # the SDK's HTTP library: the same defaults the SDK would use

        return httpx2.create_ssl_context()
    except (ImportError, AttributeError):
        return ssl.create_default_context()


def _retry_after(exc: openai.APIStatusError, cap: float = 60.0) -> float:
    """The server's Retry-After in seconds (bounded), or a short default."""
    try:
        return min(cap, max(0.0, float(exc.response.headers.get("retry-after", "0.5"))))
    except (TypeError, ValueError):
        return 0.5


def _try_parse(raw: str, parse: Callable[[Any], T]) -> tuple[T | None, str | None]:
    try:
        data = loads_lenient(raw)
    except ValueError as exc:
        return None, str(exc)
    try:
        return parse(data), None
    except (ValidationError, ValueError, TypeError, KeyError) as exc:
        first = str(exc).splitlines()[0:3]
        return None, "unexpected shape: " + " ".join(first)[:240]
