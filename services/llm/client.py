"""The model client: `get_client` builds it, and its requests go out through the OpenAI SDK here and nowhere else
(chat calls through `LLMClient._post`)."""

from __future__ import annotations

import copy
import functools
import itertools
import logging
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from db.redact import redact_url, split_userinfo
from services.config import BackendConfig
from services.llm import keys
from services.llm.cache import ResponseCache, cache_key
from services.llm.errors import BackendError, describe_error, retry_after
from services.llm.parsing import is_cut_off, loads_lenient, try_parse
from services.llm.records import CallRecord, CallResult, UsageLedger
from services.llm.sdk import openai

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


def names_the_format(exc: openai.APIStatusError) -> bool:
    """Whether a refusal says it is about the requested output format (response_format, a JSON schema)."""
    said = f"{getattr(exc, 'message', '')} {getattr(exc, 'body', '')}".lower()
    return any(w in said for w in ("response_format", "response format", "json_schema", "schema"))


@dataclass
class _Reply:
    raw: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None


_mode_memory: dict[tuple[str, str], str] = {}
_mode_lock = threading.Lock()


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
        # Ask the model even when the cache has an answer, and let the new answer replace the cached one
        # (a failed batch item re-run: its cached answer is the one that failed).
        self.refresh = False
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

    @property
    def sends_key(self) -> bool:
        """Whether requests carry a key (set, or credentials in the base URL)."""
        return bool(self.backend.api_key and self.backend.api_key.get_secret_value()) or bool(
            split_userinfo(self.base_url)[1]
        )

    def _seen_key_need(self, exc: Exception | None) -> None:
        """Remember whether an endpoint called without a key answers (services/llm/keys.py)."""
        if self.backend.is_embedded or self.sends_key:
            return
        if exc is None:
            keys.remember(self.public_url, asks=False)
        elif isinstance(exc, openai.AuthenticationError):
            keys.remember(self.public_url, asks=True)

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
        # Credentials in the base URL (http://user:KEY@host/v1) are never sent as Basic auth (the HTTP client
        # would, and OpenAI-compatible servers expect a Bearer key): the URL goes out without them, and they
        # are the key when no key is set (LLM_API_KEY or OPENAI_API_KEY wins over them).
        url, url_key = split_userinfo(self.base_url)
        key = self.backend.api_key.get_secret_value() if self.backend.api_key else ""
        return openai.OpenAI(
            base_url=url,
            api_key=key or url_key or "not-needed",
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
                        time.sleep(retry_after(exc))
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
        i, strikes = 0, 0
        while i < len(modes):
            mode = modes[i]
            self._sent.n = 0
            probe = schema is not None and known is None and mode == "json_schema"
            try:
                reply = self._request(messages, schema, mode, temperature, probe=probe)
            except (openai.BadRequestError, openai.UnprocessableEntityError, openai.InternalServerError) as exc:
                last = describe_error(exc, self.backend, self.public_url)
                if probe and not names_the_format(exc) and strikes == 0:
                    # One refusal that does not name the format may be a passing fault: ask again before
                    # taking json_schema for unsupported (for the rest of the process).
                    strikes += 1
                    log.info("json_schema probe failed (%s); asking once more before stepping down", exc)
                    continue
                # A 500 means "unsupported" only for the json_schema probe; elsewhere it is a failing server.
                unsupported = not isinstance(exc, openai.InternalServerError) or probe
                if mode == "text" or i == len(modes) - 1 or not unsupported:
                    raise last from exc
                log.info("server refused response_format=%s (%s); trying the next mode", mode, exc)
                i, strikes = i + 1, 0
                continue
            except openai.OpenAIError as exc:
                self._seen_key_need(exc)
                raise describe_error(exc, self.backend, self.public_url) from exc
            finally:
                rec.requests += self._sent.n
            rec.answered = (rec.answered or 0) + 1  # the SDK's retries inside it are requests, not answers
            self._seen_key_need(None)
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
        if self.cache is not None and not self.refresh:
            hit = self.cache.get(key)
            if hit is not None and not is_cut_off(hit["raw"]):
                try:
                    value = parse(loads_lenient(hit["raw"]))
                    rec.cached, rec.raw = True, hit["raw"]
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
        rec.raw = result.raw or ""
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
            self.cache.put(
                key, model=self.backend.model, prompt_version=prompt_version, payload=payload, replace=self.refresh
            )

    def _call_and_parse(
        self, messages: list[dict], parse: Callable[[Any], T], schema: dict | None, temp: float, rec: CallRecord
    ) -> CallResult[T]:
        reply = self._request_with_fallback(messages, schema, temp, rec)
        rec.prompt_tokens += reply.prompt_tokens
        rec.completion_tokens += reply.completion_tokens
        # A cut-off answer is never used, even when a repair could make it parse: the repair would drop
        # whatever the model had still to say.
        cut = self._cut_reason(reply)
        value, problem = (None, cut) if cut else try_parse(reply.raw, parse)
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
        value, problem2 = (None, cut) if cut else try_parse(second.raw, parse)
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
        if self.cache is not None and not self.refresh and (hit := self.cache.get(key)) is not None:
            rec.cached, rec.raw = True, hit["raw"]
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
            self._seen_key_need(exc)
            return False, str(describe_error(exc, self.backend, redact_url(base)))
        self._seen_key_need(None)
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
