"""Cut-off answers: a model stopped at max_tokens, JSON that breaks off, and HTTP bodies cut short on the
wire. Each is a failure with its reason, counted, never cached, and a later run asks the model again."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from services.config import BackendConfig
from services.llm import LLMClient, MemoryCache, get_client, is_cut_off
from tests.fakes import FakeOpenAIServer, Reply, _Handler
from tests.support.waiting import HEALTHY_TIMEOUT

CUT = "x-fault-cut"  # keep this many bytes of the body; Content-Length says the cut length
SHORT = "x-fault-short"  # announce the whole body, send this many bytes, close


class _CuttingHandler(_Handler):
    def _send(self, status, payload, headers=None):
        headers = dict(headers or {})
        cut, short = headers.pop(CUT, None), headers.pop(SHORT, None)
        if cut is None and short is None:
            return super()._send(status, payload, headers)
        data = json.dumps(payload).encode()
        keep = int(cut if cut is not None else short)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(keep if cut is not None else len(data)))
        self.end_headers()
        self.wfile.write(data[:keep])
        self.close_connection = True


class CuttingServer(FakeOpenAIServer):
    """The fake server, able to cut a response body (headers x-fault-cut / x-fault-short on a Reply)."""

    handler_class = _CuttingHandler


class Verdicts(BaseModel):
    verdicts: list[str]


FULL = {"verdicts": ["consistent", "inconsistent", "consistent"]}
CUT_JSON = json.dumps(FULL)[:40]  # '{"verdicts": ["consistent", "inconsisten'


@pytest.fixture
def fake():
    with CuttingServer() as server:
        yield server


def client_for(fake, cache=None, **kw) -> LLMClient:
    backend = BackendConfig(
        kind="openai", base_url=fake.base_url, model="fake-model", max_retries=0, timeout=HEALTHY_TIMEOUT, **kw
    )
    return get_client(backend, cache=cache)


def ask(client: LLMClient):
    return client.chat_json(
        [{"role": "user", "content": "Judge."}],
        parse=Verdicts.model_validate,
        schema=Verdicts.model_json_schema(),
        prompt_version="t1",
        stage="dce",
    )


def test_an_answer_stopped_at_max_tokens_is_a_failure_and_is_never_cached(fake):
    cache = MemoryCache()
    client = client_for(fake, cache, max_tokens=12)
    # json_repair would turn this into a shorter, valid list: the third verdict would be lost unseen.
    fake.enqueue(Reply(content=CUT_JSON, finish_reason="length"))
    fake.enqueue(Reply(content=CUT_JSON, finish_reason="length"))
    res = ask(client)
    assert not res.ok and res.value is None
    assert "cut off" in res.error and "max_tokens=12" in res.error
    assert client.ledger.summary()["calls"] == 2 and client.ledger.summary()["errors"] == 1
    assert cache.entries == {}, "nothing cut off is cached"
    fake.enqueue_json(FULL)  # a re-run asks the model again
    again = ask(client)
    assert again.ok and again.value.verdicts == FULL["verdicts"] and not again.cached
    assert len(cache.entries) == 1


def test_an_answer_complete_but_marked_length_is_not_used_either(fake):
    fake.enqueue(Reply(content=json.dumps(FULL), finish_reason="length"))
    fake.enqueue_json(FULL)
    client = client_for(fake)
    res = ask(client)
    assert res.ok and client.ledger.summary()["calls"] == 2, "asked once more, with the reason"
    assert "max_tokens" in fake.requests[1]["messages"][-1]["content"]


def test_json_that_breaks_off_without_a_length_stop_is_a_failure(fake):
    fake.enqueue(Reply(content=CUT_JSON))
    fake.enqueue(Reply(content="```json\n" + CUT_JSON))
    res = ask(client_for(fake))
    assert not res.ok and "breaks off" in res.error


def test_a_cut_off_entry_left_in_the_cache_is_asked_again(fake):
    cache = MemoryCache()
    client = client_for(fake, cache)
    fake.enqueue_json(FULL)
    assert ask(client).ok
    (key,) = cache.entries
    cache.entries[key]["payload"] = {"raw": CUT_JSON}  # written by an older version that repaired cut-off answers
    fake.enqueue_json(FULL)
    res = ask(client)
    assert res.ok and not res.cached and res.value.verdicts == FULL["verdicts"]


@pytest.mark.parametrize("how", [CUT, SHORT])
def test_an_http_body_cut_short_is_a_failure_with_its_reason_and_counted(fake, how):
    for _ in range(3):
        fake.enqueue(Reply(content=json.dumps(FULL), headers={how: "60"}))  # about half the body
    client = client_for(fake)
    res = ask(client)
    assert not res.ok and res.error and not res.fatal
    assert "Traceback" not in res.error and "cut short" in res.error
    assert client.ledger.summary()["calls"] >= 1 and client.ledger.summary()["errors"] == 1


@pytest.mark.parametrize(
    ("raw", "cut"),
    [
        ('{"a": [1, 2', True),
        ('{"a": "ab', True),
        ('```json\n{"a": {"b": 1}', True),
        ('{"a": 1}', False),
        ('```json\n{"a": "}"}\n```', False),
        ('{"a": 1} and then some prose [', False),
        ("{'a': 1,}", False),
        ("no JSON at all", False),
    ],
)
def test_is_cut_off(raw, cut):
    assert is_cut_off(raw) is cut


def test_a_batch_item_whose_answers_were_cut_off_fails_with_the_reason_and_a_rerun_asks_again(tmp_path):
    from db.engine import make_engine
    from services.jobs import batches
    from tests.fakes import toy_judge
    from tests.support.batches import BAD, EVAL, FIX, judge_backend, make_dataset

    judge = toy_judge(BAD, FIX)
    cutting = {"on": True}

    def responder(body: dict):
        if body["messages"][-1]["content"].startswith("Your previous answer"):
            body = {**body, "messages": body["messages"][:-2]}
        answer = json.dumps(judge(body))
        return Reply(content=answer[: len(answer) // 2], finish_reason="length") if cutting["on"] else answer

    engine = make_engine(f"sqlite:///{tmp_path}/cut.db")
    with FakeOpenAIServer(responder=responder) as fake:
        ds = make_dataset(engine, 2)
        bid = batches.create_batch(engine, dataset_id=ds, backend=judge_backend(fake), cfg=EVAL)
        batches.process_batch(engine, bid)
        p = batches.progress(engine, bid)
        assert p.failed == 2 and p.calls == 4
        assert all("cut off" in e for e in batches.items_frame(engine, bid)["error"])
        cutting["on"] = False
        assert batches.reopen(engine, bid, failed_too=True) == 2
        batches.process_batch(engine, bid)
        p = batches.progress(engine, bid)
        assert p.done == 2 and p.cache_hits == 0 and len(fake.requests) == 6, "asked again, nothing cached"
    engine.dispose()
