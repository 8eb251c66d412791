"""LLMClient against the fake OpenAI server over real HTTP."""

from __future__ import annotations

import ast
import hashlib
import json
import socket
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import BaseModel, SecretStr
from sqlalchemy import event, select

import services.llm.client
from db.cache import BufferedSqlCache, SqlCache
from db.models import LLMCacheEntry
from services.config import BackendConfig
from services.llm import LLMClient, MemoryCache, ResponseCache, UsageLedger, get_client
from tests.fakes import FakeOpenAIServer, Reply
from tests.support.waiting import HEALTHY_TIMEOUT, WAIT_LIMIT

SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
MSGS = [{"role": "user", "content": "What is six times seven? Answer in JSON."}]


class Answer(BaseModel):
    answer: int


def ask(client: LLMClient, messages=MSGS, schema=SCHEMA, **kw):
    kw.setdefault("prompt_version", "test@1")
    kw.setdefault("stage", "test")
    return client.chat_json(messages, parse=Answer.model_validate, schema=schema, **kw)


def modes(fake: FakeOpenAIServer) -> list[str | None]:
    """The response_format of each request, as the mode name the client uses."""
    out = []
    for body in fake.requests:
        rf = body.get("response_format")
        if rf is None:
            out.append(None)
        elif rf["type"] == "json_object" and "schema" in rf:
            out.append("json_object_schema")
        else:
            out.append(rf["type"])
    return out


# -- structured output modes ------------------------------------------------------------------
def test_openai_backend_sends_json_schema_first(fake, client):
    fake.enqueue_json({"answer": 42})
    res = ask(client)
    assert res.ok and res.value == Answer(answer=42)
    assert len(fake.requests) == 1
    body = fake.requests[0]
    assert body["model"] == "fake-model"
    assert body["messages"] == MSGS
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert services.llm.client._mode_memory[(fake.base_url, "fake-model")] == "json_schema"


def test_json_schema_rejected_with_500_falls_back_to_json_object_schema_and_remembers(backend):
    with FakeOpenAIServer(reject_json_schema=True) as fake:
        backend = backend.with_changes(base_url=fake.base_url)
        fake.enqueue_json({"answer": 1})
        fake.enqueue_json({"answer": 2})
        client = get_client(backend)
        first = ask(client)
        assert first.ok and first.value.answer == 1
        # The first json_schema request is a probe sent without SDK retries; its 500 steps down one mode.
        assert modes(fake) == ["json_schema", "json_object_schema"]
        assert fake.requests[-1]["response_format"] == {"type": "json_object", "schema": SCHEMA}
        assert client.ledger.summary()["calls"] == 2

        # A new client for the same server and model starts at the mode that worked.
        fake.clear_requests()
        second = ask(get_client(backend), messages=[{"role": "user", "content": "again"}])
        assert second.ok and second.value.answer == 2
        assert modes(fake) == ["json_object_schema"]


def test_500_after_the_mode_is_known_is_a_server_failure_not_a_format_refusal(fake, client):
    fake.enqueue_json({"answer": 1})
    assert ask(client).ok  # json_schema works and is remembered
    for _ in range(client.backend.max_retries + 1):
        fake.enqueue_status(500)
    res = ask(client, messages=[{"role": "user", "content": "again"}])
    assert res.error and "500" in res.error
    assert modes(fake)[1:] == ["json_schema"] * (client.backend.max_retries + 1)  # no step down to JSON mode
    assert services.llm.client._mode_memory[(fake.base_url, "fake-model")] == "json_schema"


def test_400_on_json_schema_steps_down_without_sdk_retries(fake, client):
    fake.enqueue_status(400, {"error": {"message": "response_format json_schema not supported"}})
    fake.enqueue_json({"answer": 3})
    res = ask(client)
    assert res.ok and res.value.answer == 3
    assert modes(fake) == ["json_schema", "json_object_schema"]
    assert services.llm.client._mode_memory[(fake.base_url, "fake-model")] == "json_object_schema"


def test_remembered_mode_is_per_model(fake, backend):
    services.llm.client._mode_memory[(fake.base_url, "other-model")] = "json_object"
    fake.enqueue_json({"answer": 1})
    assert ask(get_client(backend)).ok
    assert modes(fake) == ["json_schema"]


def test_embedded_backend_starts_with_json_object_schema(fake):
    client = get_client(BackendConfig(kind="embedded", max_retries=0, timeout=HEALTHY_TIMEOUT), base_url=fake.base_url)
    fake.enqueue_json({"answer": 5})
    assert ask(client).value.answer == 5
    assert modes(fake) == ["json_object_schema"]


def test_no_schema_sends_no_response_format(fake, client):
    fake.enqueue_json({"answer": 9})
    res = ask(client, schema=None)
    assert res.ok
    assert modes(fake) == [None]
    assert (fake.base_url, "fake-model") not in services.llm.client._mode_memory


# -- repair and retry -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw",
    [
        '```json\n{"answer": 42}\n```\nI hope this helps! Let me know if you need more.',
        "{'answer': 42}",
        'Here is the JSON: {"answer": 42,}',
    ],
)
def test_malformed_json_is_repaired_without_a_second_request(fake, client, raw):
    fake.enqueue_text(raw)
    res = ask(client)
    assert res.ok and res.value.answer == 42
    assert res.raw == raw
    assert len(fake.requests) == 1


def test_prose_triggers_one_retry_asking_for_json(fake, client):
    fake.enqueue_text("The answer is forty-two, obviously.", usage=(10, 6))
    fake.enqueue_json({"answer": 42}, usage=(30, 4))
    res = ask(client)
    assert res.ok and res.value.answer == 42
    assert len(fake.requests) == 2
    retry = fake.requests[1]["messages"]
    assert retry[: len(MSGS)] == MSGS
    assert retry[-2] == {"role": "assistant", "content": "The answer is forty-two, obviously."}
    assert retry[-1]["role"] == "user"
    assert "only the JSON" in retry[-1]["content"]
    assert "no JSON found" in retry[-1]["content"]
    usage = client.ledger.summary()
    assert (usage["calls"], usage["prompt_tokens"], usage["completion_tokens"]) == (2, 40, 10)


def test_prose_twice_gives_an_error_and_no_value(fake, client):
    fake.enqueue_text("I would say the answer is forty-two.")
    fake.enqueue_text("Sorry, forty-two.")
    res = ask(client)
    assert res.value is None and not res.ok
    assert res.error and "twice" in res.error and "Sorry, forty-two." in res.error
    assert not res.fatal
    assert len(fake.requests) == 2
    assert client.ledger.summary()["errors"] == 1


def test_wrong_shape_is_retried_with_the_problem_named(fake, client):
    fake.enqueue_json({"result": "42"})
    fake.enqueue_json({"answer": 42})
    res = ask(client)
    assert res.ok and res.value.answer == 42
    assert "unexpected shape" in fake.requests[1]["messages"][-1]["content"]


def test_truncated_answer_retry_mentions_max_tokens(fake, backend):
    client = get_client(backend.with_changes(max_tokens=17))
    fake.enqueue(Reply(content="Let me think step by step about", finish_reason="length"))
    fake.enqueue_json({"answer": 1})
    assert ask(client).ok
    assert fake.requests[0]["max_tokens"] == 17
    assert "max_tokens=17" in fake.requests[1]["messages"][-1]["content"]


# -- transport errors -------------------------------------------------------------------------
def test_429_with_retry_after_then_success_counts_the_extra_request(fake, client):
    fake.enqueue_status(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "0"})
    fake.enqueue_json({"answer": 7})
    res = ask(client)
    assert res.ok and res.value.answer == 7
    assert len(fake.requests) == 2
    assert client.ledger.summary()["calls"] == 2


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every pause taken through time.sleep (the client's and the SDK's), recorded instead of slept."""
    seen: list[float] = []
    monkeypatch.setattr(time, "sleep", seen.append)
    return seen


def test_429_on_the_json_schema_probe_waits_retry_after_and_keeps_the_mode(fake, client, waits):
    fake.enqueue_status(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "7"})
    fake.enqueue_json({"answer": 7})
    res = ask(client)
    assert res.ok
    assert waits == [7.0]  # the server's Retry-After, once, before the second request
    assert modes(fake) == ["json_schema", "json_schema"]  # a rate limit says nothing about format support


def test_retry_after_is_honoured(fake, client, waits):
    fake.enqueue_status(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "7"})
    fake.enqueue_json({"answer": 7})
    assert ask(client, schema=None).ok
    assert waits == [7.0] and len(fake.requests) == 2


def test_500_beyond_max_retries_is_an_error_mentioning_500(backend):
    with FakeOpenAIServer(responder=lambda body: Reply(status=500, body={"error": {"message": "boom"}})) as fake:
        client = get_client(backend.with_changes(base_url=fake.base_url))
        res = ask(client, schema=None)
        assert res.value is None
        assert "500" in res.error and "boom" in res.error
        assert not res.fatal
        assert len(fake.requests) == backend.max_retries + 1
        assert client.ledger.summary()["errors"] == 1


def test_500_on_every_mode_gives_up_and_remembers_no_mode(backend):
    with FakeOpenAIServer(responder=lambda body: Reply(status=500)) as fake:
        client = get_client(backend.with_changes(base_url=fake.base_url, max_retries=0))
        res = ask(client)
        assert res.value is None and "500" in res.error
        # The json_schema probe is asked twice, then steps down once; a 500 there is a failing server.
        assert modes(fake) == ["json_schema", "json_schema", "json_object_schema"]
        assert services.llm.client._mode_memory == {}


def test_one_500_on_the_first_structured_request_is_not_taken_for_an_unsupported_format(fake, client):
    fake.enqueue_status(500, {"error": {"message": "upstream worker restarted"}})
    fake.enqueue_json({"answer": 1})
    fake.enqueue_json({"answer": 2})
    assert ask(client).value.answer == 1
    assert modes(fake) == ["json_schema", "json_schema"]  # asked again, in the same format
    assert services.llm.client._mode_memory[(fake.base_url, "fake-model")] == "json_schema"
    assert ask(client, messages=[{"role": "user", "content": "again"}]).value.answer == 2
    assert modes(fake)[-1] == "json_schema"


def test_a_refusal_that_names_the_format_steps_down_at_once_and_repeated_500s_do_too(backend):
    answers = iter([Reply(status=500, body={"error": {"message": "busy"}})] * 2)

    def respond(body):
        if body.get("response_format", {}).get("type") == "json_schema":
            return next(answers)
        return json.dumps({"answer": 5})

    with FakeOpenAIServer(responder=respond) as fake:
        client = get_client(backend.with_changes(base_url=fake.base_url, max_retries=0))
        assert ask(client).value.answer == 5
        assert modes(fake) == ["json_schema", "json_schema", "json_object_schema"]  # two in a row: evidence
        assert services.llm.client._mode_memory[(fake.base_url, "fake-model")] == "json_object_schema"
    services.llm.client._mode_memory.clear()
    with FakeOpenAIServer(reject_json_schema=True) as fake:  # "Unsupported response_format type"
        fake.enqueue_json({"answer": 6})
        assert ask(get_client(backend.with_changes(base_url=fake.base_url))).value.answer == 6
        assert modes(fake) == ["json_schema", "json_object_schema"]


def test_stall_past_timeout_is_a_timeout_error(fake, backend):
    client = get_client(backend.with_changes(timeout=0.5, max_retries=0))
    # The fake answers only when the test ends (its wait ends early then): an answer would mean the timeout was
    # ignored, and no pause of a loaded machine between the two can make the answer come first.
    fake.enqueue_delay(WAIT_LIMIT, then={"answer": 1})
    res = ask(client)
    assert res.value is None
    assert "timeout" in res.error.lower()
    assert not res.fatal
    assert len(fake.requests) == 1  # a timeout is not a reason to try another response_format


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_port_is_fatal_cannot_reach():
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    client = get_client(BackendConfig(kind="openai", base_url=url, model="m", max_retries=1, timeout=2.0))
    res = ask(client)
    assert res.value is None and res.fatal
    assert res.error.startswith(f"Cannot reach {url}")


def test_401_is_fatal_and_mentions_the_api_key(fake, client):
    fake.enqueue_status(401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}})
    res = ask(client)
    assert res.fatal and res.value is None
    assert "API key" in res.error and "401" in res.error
    assert len(fake.requests) == 1


def test_404_is_fatal_and_names_the_model(fake, client):
    fake.enqueue_status(404, {"error": {"message": "The model does not exist"}})
    res = ask(client)
    assert res.fatal and "fake-model" in res.error and "404" in res.error


def test_api_key_is_sent_as_bearer_token(fake, backend):
    client = get_client(backend.with_changes(api_key=SecretStr("sk-test-123")))
    fake.enqueue_json({"answer": 1})
    ask(client)
    assert fake.request_headers[0].get("authorization") == "Bearer sk-test-123"
    assert "sk-test-123" not in repr(backend.with_changes(api_key=SecretStr("sk-test-123")))


def test_test_connection_reports_model_and_answer(fake, client):
    fake.enqueue_text("OK")
    ok, msg = client.test_connection()
    assert ok and "'fake-model'" in msg and "'OK'" in msg
    fake.enqueue_status(401)
    ok, msg = client.test_connection()
    assert not ok and "API key" in msg


# -- cache and ledger -------------------------------------------------------------------------
def test_identical_call_is_served_from_the_cache(fake, backend, engine):
    cache = SqlCache(engine)
    fake.enqueue_json({"answer": 42}, usage=(12, 3))
    first = ask(get_client(backend, cache=cache))
    assert first.ok and not first.cached

    ledger = UsageLedger()
    second = ask(get_client(backend, cache=cache, ledger=ledger))
    assert second.cached and second.value == first.value and second.raw == first.raw
    assert len(fake.requests) == 1
    summary = ledger.summary()
    assert summary["cache_hits"] == 1 and summary["calls"] == 0
    assert summary["prompt_tokens"] == 0


@pytest.mark.parametrize(
    "change",
    [
        {"sample_index": 1},
        {"prompt_version": "test@2"},
        {"temperature": 0.7},
        {"messages": [{"role": "user", "content": "What is six times eight?"}]},
    ],
)
def test_a_different_key_sends_a_new_request(fake, backend, engine, change):
    cache = SqlCache(engine)
    fake.responder = lambda body: {"answer": 1}
    assert ask(get_client(backend, cache=cache)).ok
    res = ask(get_client(backend, cache=cache), **change)
    assert res.ok and not res.cached
    assert len(fake.requests) == 2


def test_the_same_model_name_on_another_server_is_not_served_from_the_cache(fake, backend, engine):
    cache = SqlCache(engine)
    fake.responder = lambda body: {"answer": 1}
    assert ask(get_client(backend, cache=cache)).ok
    elsewhere = backend.with_changes(base_url=backend.base_url.replace("127.0.0.1", "localhost"))
    res = ask(get_client(elsewhere, cache=cache))
    assert res.ok and not res.cached
    assert len(fake.requests) == 2


def test_a_failed_call_is_not_cached(fake, backend, engine):
    cache = SqlCache(engine)
    fake.enqueue_text("no idea")
    fake.enqueue_text("still no idea")
    assert not ask(get_client(backend, cache=cache)).ok
    fake.enqueue_json({"answer": 4})
    res = ask(get_client(backend, cache=cache))
    assert res.ok and not res.cached
    assert len(fake.requests) == 3


def test_a_cached_answer_that_no_longer_parses_is_asked_again(fake, backend, engine):
    cache = SqlCache(engine)
    fake.enqueue_json({"answer": 4})
    client = get_client(backend, cache=cache)
    assert ask(client).ok

    class Other(BaseModel):
        other: str

    fake.enqueue_json({"other": "x"})
    res = client.chat_json(MSGS, parse=Other.model_validate, schema=SCHEMA, prompt_version="test@1", stage="t")
    assert res.ok and not res.cached and res.value.other == "x"
    assert len(fake.requests) == 2


def test_ledger_counts_tokens_from_usage(fake, client):
    fake.enqueue_json({"answer": 1}, usage=(11, 7))
    fake.enqueue_json({"answer": 2}, usage=(5, 2))
    ask(client, stage="dce")
    ask(client, messages=[{"role": "user", "content": "other"}], stage="amc")
    s = client.ledger.summary()
    assert (s["calls"], s["prompt_tokens"], s["completion_tokens"], s["errors"]) == (2, 16, 9, 0)
    assert [r.stage for r in client.ledger.records] == ["dce", "amc"]
    assert all(r.latency_ms > 0 for r in client.ledger.records)


# -- get_client and the cache interface -------------------------------------------------------
def stored_key(backend: BackendConfig, messages=MSGS, prompt_version="test@1", sample=0) -> str:
    """A chat_json cache key as the app has always written it (sha256 of this JSON), computed here on its own."""
    blob = json.dumps(
        {
            "model": f"{backend.public_url}|{backend.model}",
            "prompt": prompt_version,
            "messages": messages,
            "params": {"temperature": backend.temperature, "max_tokens": backend.max_tokens},
            "sample": sample,
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def make_cache(kind: str, engine) -> ResponseCache:
    if kind == "memory":
        return MemoryCache()
    return SqlCache(engine) if kind == "sql" else BufferedSqlCache(engine)


def flush(cache: ResponseCache, engine) -> None:
    """What the batch's one writer does; the other caches have nothing buffered."""
    if isinstance(cache, BufferedSqlCache):
        with engine.begin() as conn:
            cache.flush(conn)


@pytest.mark.parametrize("kind", ["sql", "buffered"])
def test_an_answer_cached_by_an_earlier_version_is_still_a_hit(fake, backend, engine, kind):
    with engine.begin() as conn:  # the row as earlier versions stored it
        conn.execute(
            LLMCacheEntry.__table__.insert(),
            [
                {
                    "key": stored_key(backend),
                    "model": "fake-model",
                    "prompt_version": "test@1",
                    "payload": {"raw": '{"answer": 42}', "prompt_tokens": 12, "completion_tokens": 3},
                    "created_at": datetime(2025, 1, 1, tzinfo=UTC),
                }
            ],
        )
    ledger = UsageLedger()
    res = ask(get_client(backend, cache=make_cache(kind, engine), ledger=ledger))
    assert res.ok and res.cached and res.value == Answer(answer=42)
    assert fake.requests == [] and ledger.summary()["cache_hits"] == 1


@pytest.mark.parametrize("kind", ["sql", "buffered"])
def test_a_new_answer_is_stored_under_the_same_key_and_shape_as_before(fake, backend, engine, kind):
    cache = make_cache(kind, engine)
    fake.enqueue_json({"answer": 7}, usage=(12, 3))
    res = ask(get_client(backend, cache=cache))
    assert res.ok and not res.cached
    flush(cache, engine)
    with engine.connect() as conn:
        rows = conn.execute(select(LLMCacheEntry)).all()
    assert [(r.key, r.model, r.prompt_version) for r in rows] == [(stored_key(backend), "fake-model", "test@1")]
    assert rows[0].payload == {"raw": res.raw, "prompt_tokens": 12, "completion_tokens": 3}


@pytest.mark.parametrize("kind", ["memory", "sql", "buffered"])
def test_every_cache_keeps_the_first_answer_and_hands_out_copies(engine, kind):
    cache = make_cache(kind, engine)
    assert isinstance(cache, ResponseCache)
    assert cache.get("k") is None
    cache.put("k", model="m", prompt_version="p@1", payload={"raw": "first"})
    cache.put("k", model="m", prompt_version="p@1", payload={"raw": "second"})
    flush(cache, engine)
    got = cache.get("k")
    assert got == {"raw": "first"}
    got["raw"] = "changed by the caller"
    assert cache.get("k") == {"raw": "first"}
    assert cache.get("other") is None


def test_the_buffered_cache_writes_only_when_flushed_and_keeps_an_entry_stored_meanwhile(engine):
    buffered = BufferedSqlCache(engine, "m")
    direct = SqlCache(engine)
    buffered.put("new", model="m", prompt_version="p", payload={"raw": "mine"})
    direct.put("raced", model="m", prompt_version="p", payload={"raw": "theirs"})
    buffered.put("raced", model="m", prompt_version="p", payload={"raw": "mine"})
    assert direct.get("new") is None, "nothing reaches the database before the writer flushes"
    assert buffered.get("new") == {"raw": "mine"}
    flush(buffered, engine)
    assert direct.get("new") == {"raw": "mine"}
    assert direct.get("raced") == buffered.get("raced") == {"raw": "theirs"}


def test_the_buffered_cache_answers_a_new_key_without_reading_the_database(engine):
    SqlCache(engine).put("old", model="m", prompt_version="p", payload={"raw": "stored"})
    cache = BufferedSqlCache(engine, "m")
    statements: list[str] = []
    listener = lambda *args: statements.append(args[2])  # noqa: E731 - (conn, cursor, statement, ...)
    event.listen(engine, "before_cursor_execute", listener)
    try:
        assert cache.get("never-stored") is None
        cache.put("fresh", model="m", prompt_version="p", payload={"raw": "x"})
        assert cache.get("fresh") == {"raw": "x"}
        assert statements == []
        assert cache.get("old") == {"raw": "stored"}
        assert len(statements) == 1
    finally:
        event.remove(engine, "before_cursor_execute", listener)


def test_a_client_built_with_a_sample_asks_again_and_caches_under_that_sample(fake, backend):
    cache = MemoryCache()
    fake.responder = lambda body: {"answer": 1}
    assert ask(get_client(backend, cache=cache)).ok
    repeat = get_client(backend, cache=cache, sample=2)
    first = ask(repeat)
    assert first.ok and not first.cached and len(fake.requests) == 2
    assert set(cache.entries) == {stored_key(backend), stored_key(backend, sample=2)}
    assert ask(get_client(backend, cache=cache), sample_index=2).cached
    assert ask(repeat).cached and len(fake.requests) == 2


def test_before_send_runs_before_every_request_and_can_stop_it(fake, backend):
    seen: list[int] = []
    fake.enqueue_text("not JSON")  # one answer that cannot be read, then a second request
    fake.enqueue_json({"answer": 3})
    client = get_client(backend, before_send=lambda: seen.append(len(fake.requests)))
    assert ask(client).ok
    assert seen == [0, 1] and len(fake.requests) == 2

    class Lost(Exception):
        pass

    def refuse() -> None:
        raise Lost("this worker no longer holds the item")

    with pytest.raises(Lost):
        ask(get_client(backend, before_send=refuse), messages=[{"role": "user", "content": "other"}])
    assert len(fake.requests) == 2, "the refused request never reached the server"


SOURCES = ("services", "components", "pages", "clitools", "tests", "db", "cli.py", "app.py")


def test_nothing_but_get_client_builds_a_client():
    root = Path(__file__).resolve().parents[2]
    offenders = []
    files = [f for s in SOURCES for f in ((root / s).rglob("*.py") if (root / s).is_dir() else [root / s])]
    for path in sorted(f for f in files if f.exists() and f != root / "services" / "llm" / "client.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Call):
                names = [node.func]
            elif isinstance(node, ast.ClassDef):
                names = list(node.bases)
            if any(getattr(n, "id", getattr(n, "attr", None)) == "LLMClient" for n in names):
                offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert offenders == [], f"build clients with services.llm.get_client, not LLMClient directly: {offenders}"
