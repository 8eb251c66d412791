"""The embedded model's speed, measured on the machine the tests run on: what tells a slow model from a broken one."""

from __future__ import annotations

import itertools
import socket

import pytest

import services.embedded
from services.embedded import EmbeddedModelError, ModelSpeed, measure_speed
from tests.fakes import Reply
from tests.support.waiting import MODEL_TIMEOUT_FLOOR, SAFETY, WAIT_LIMIT, model_timeout


def test_each_rate_is_its_probes_tokens_over_its_wall_time(fake, monkeypatch):
    # Each request reads the clock twice (start, end): 2 s, then 4 s, then 8 s of wall time.
    clock = itertools.chain([0.0, 2.0, 10.0, 14.0, 20.0, 28.0], itertools.count(100.0))
    monkeypatch.setattr(services.embedded.time, "monotonic", lambda: next(clock))
    fake.enqueue(Reply(content="OK", usage=(9, 1)))
    fake.enqueue(Reply(content="3", usage=(200, 1)))
    fake.enqueue(Reply(content='{"words": []}', usage=(12, 64)))

    speed = measure_speed(fake.base_url, timeout=5)

    assert speed == ModelSpeed(first_answer_s=2.0, prompt_tokens_per_s=200 / 4, completion_tokens_per_s=64 / 8)
    first, read, write = fake.requests
    assert first["max_tokens"] == 1 and read["max_tokens"] == 1 and write["max_tokens"] == 64
    assert len(read["messages"][0]["content"]) > 5 * len(first["messages"][0]["content"])
    # the answer is written under a JSON schema, as the app asks for it (constrained decoding is slower)
    assert write["response_format"]["type"] == "json_object" and "schema" in write["response_format"]


def test_a_request_takes_the_answer_time_plus_reading_plus_writing():
    speed = ModelSpeed(first_answer_s=1.0, prompt_tokens_per_s=100.0, completion_tokens_per_s=10.0)
    assert speed.seconds_for(300, 50) == pytest.approx(1.0 + 3.0 + 5.0)
    slow = ModelSpeed(first_answer_s=5.0, prompt_tokens_per_s=10.0, completion_tokens_per_s=2.0)
    # 3 characters a token: 3000 characters are 1001 tokens, 100 s to read, 256 s to write 512 tokens
    assert model_timeout(slow, prompt_chars=3000, max_tokens=512) == pytest.approx(SAFETY * (5.0 + 100.1 + 256.0))
    assert model_timeout(speed, prompt_chars=30, max_tokens=1) == MODEL_TIMEOUT_FLOOR


def test_a_server_that_never_answers_is_broken_not_slow(fake):
    fake.enqueue_delay(WAIT_LIMIT, then="OK")  # answers only when the test ends
    with pytest.raises(EmbeddedModelError, match=r"gave no answer to a one-token request"):
        measure_speed(fake.base_url, timeout=0.2)


def test_a_server_that_is_not_there_is_broken():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket is closed
    with pytest.raises(EmbeddedModelError, match=r"gave no answer to a one-token request"):
        measure_speed(f"http://127.0.0.1:{port}/v1", timeout=5)
