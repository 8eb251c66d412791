"""A batch through a flaky model server: dropped connections, 429 with Retry-After, 500, truncated JSON
and answers that stall past the timeout. Every item ends done or failed with its reason; a re-run of
the failed items, once the server is healthy, finishes them without sending a finished item again."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections import Counter

from sqlmodel import Session, select

from db.engine import make_engine
from db.models import BatchItem, DatasetItem
from services import dcr
from services.config import BackendConfig
from services.jobs import batches
from tests.fakes import FakeOpenAIServer, Reply, _Handler, last_user, toy_judge
from tests.support.batches import BAD, FIX, make_dataset
from tests.support.waiting import WAIT_LIMIT

DROP = "x-fault-drop"
# The client's timeout: far above what a healthy answer from this local server takes on any machine, however
# busy, since the stalled requests below never answer in time whatever it is.
TIMEOUT = 5.0
# Item i's fault is KINDS[i % len(KINDS)] while the server is flaky.
KINDS = ["drop", "429", "500", "truncated", "stall", "none"]
FAILS_WHILE_FLAKY = {"drop", "500", "stall"}  # every attempt fails: the item is marked failed


class _FaultyHandler(_Handler):
    def _send(self, status, payload, headers=None):
        if (headers or {}).get(DROP):  # close the connection without a word
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        super()._send(status, payload, headers)


class FaultyServer(FakeOpenAIServer):
    """The fake server, able to drop a connection: a Reply whose headers hold x-fault-drop."""

    handler_class = _FaultyHandler


def item_no(body: dict) -> int | None:
    m = re.search(r"Item (\d+):", last_user(body))
    return int(m.group(1)) if m else None


class Script:
    """The flaky server's behaviour, per item; `flaky = False` makes it healthy."""

    def __init__(self) -> None:
        self.judge = toy_judge(BAD, FIX)
        self.flaky = True
        self.seen: Counter[int] = Counter()
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Reply | dict:
        if last_user(body).startswith("Your previous answer"):  # asked again: answer the original prompt
            body = {**body, "messages": body["messages"][:-2]}
        i = item_no(body)
        with self.lock:
            if i is not None:
                self.seen[i] += 1
            n = self.seen[i] if i is not None else 0
        answer = self.judge(body)
        if not self.flaky or i is None:
            return answer
        kind = KINDS[i % len(KINDS)]
        if kind == "drop":
            return Reply(headers={DROP: "1"})
        if kind == "429" and n == 1:
            return Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "0.2"})
        if kind == "500":
            return Reply(status=500, body={"error": {"message": "the model crashed"}})
        if kind == "truncated" and n == 1:
            text = json.dumps(answer)
            return Reply(content=text[: len(text) // 2], finish_reason="length")
        if kind == "stall":
            return Reply(delay=WAIT_LIMIT, then=Reply(content=json.dumps(answer)))  # answers only at shutdown
        return answer


def rows(engine, batch_id: int) -> dict[int, BatchItem]:
    """The batch's items by dataset index."""
    with Session(engine) as s:
        out = s.exec(
            select(BatchItem, DatasetItem.idx)
            .join(DatasetItem, DatasetItem.id == BatchItem.item_id)
            .where(BatchItem.batch_id == batch_id)
        ).all()
    return {idx: r for r, idx in out}


def test_a_batch_through_every_fault_ends_done_or_failed_and_a_rerun_finishes_it(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path}/faults.db")
    script = Script()
    n = 12
    with FaultyServer(responder=script) as fake:
        ds = make_dataset(engine, n)
        backend = BackendConfig(
            kind="openai", base_url=fake.base_url, model="fake-model", max_retries=2, timeout=TIMEOUT
        )
        bid = batches.create_batch(engine, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(max_rounds=0))
        batches.process_batch(engine, bid, backend=backend)

        first = rows(engine, bid)
        assert len(first) == n
        for idx, r in first.items():
            kind = KINDS[idx % len(KINDS)]
            if kind in FAILS_WHILE_FLAKY:
                assert r.status == "failed" and r.error, f"item {idx} ({kind}) is failed with its reason"
                assert r.score is None
            elif kind == "truncated" and r.status == "failed":  # a repaired half answer left a sentence unjudged
                assert "could not be judged" in r.error and r.score is None
            else:
                assert r.status == "done", f"item {idx} ({kind}): {r.error}"
            assert r.status in ("done", "failed")
        errors = {KINDS[i % len(KINDS)]: r.error for i, r in first.items() if r.status == "failed"}
        assert "timeout" in errors["stall"] and "500" in errors["500"] and "reach" in errors["drop"]
        assert all(script.seen[i] >= 2 for i in first if KINDS[i % len(KINDS)] in ("429", "drop", "500"))
        # A truncated answer is never repaired into a verdict: it is asked for again.
        for i, r in first.items():
            if KINDS[i % len(KINDS)] == "truncated":
                sents = r.result["rounds"][0]["sentences"]
                expected = ["inconsistent" if BAD in s["text"] else "consistent" for s in sents]
                assert [s["verdict"] for s in sents] == expected
                assert script.seen[i] == 2 and r.calls == 2
        assert batches.progress(engine, bid).batch.status == "done"

        # The server recovers; re-run only the failed items.
        script.flaky = False
        done_before = {i: (r.updated_at, r.result, r.attempts) for i, r in first.items() if r.status == "done"}
        script.seen.clear()
        n_failed = sum(r.status == "failed" for r in first.values())
        assert batches.reopen(engine, bid, failed_too=True) == n_failed
        batches.process_batch(engine, bid, backend=backend)
        second = rows(engine, bid)
        # A repaired half answer is read from the cache again, so its unjudged sentence stays unjudged and the
        # item stays failed (never scored); every other failed item finishes.
        cached = {i for i, r in first.items() if r.status == "failed" and KINDS[i % len(KINDS)] == "truncated"}
        assert all(r.status == "done" and r.error is None for i, r in second.items() if i not in cached)
        assert all(second[i].status == "failed" and second[i].score is None for i in cached)
        assert set(script.seen) == {i for i, r in first.items() if r.status == "failed"} - cached
        for i, before in done_before.items():  # finished items untouched: not re-sent, not re-written
            assert (second[i].updated_at, second[i].result, second[i].attempts) == before
        assert all(second[i].attempts == 2 for i in script.seen)
        p = batches.progress(engine, bid)
        assert p.batch.status == "done" and p.done == n - len(cached) and p.failed == len(cached)
    engine.dispose()
