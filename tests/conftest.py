"""Shared fixtures: an isolated environment, the fake OpenAI server, an in-memory database."""

from __future__ import annotations

import os
from collections.abc import Iterator

import openai._base_client
import pytest
from sqlalchemy.engine import Engine

import services.llm
from db.engine import make_engine
from services.config import BackendConfig, Settings
from services.llm import LLMClient, get_client
from tests.fakes import FakeOpenAIServer

_ENV_NAMES = {name.upper() for name in Settings.model_fields} | {"OPENAI_API_KEY", "DATABASE_URL"}


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Tests never read the user's LLM settings, secrets file or database."""
    for name in list(os.environ):
        if name.upper().startswith("LLM_") or name.upper() in _ENV_NAMES:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CONSISTENCY_SECRETS_FILE", str(tmp_path / "no-such-secrets.toml"))


@pytest.fixture(autouse=True)
def _queue_in_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tasks run inline (Huey's immediate mode, in memory): no test writes to a real queue or spawns a worker."""
    import services.jobs

    monkeypatch.setenv("CONSISTENCY_SPAWN_WORKER", "0")
    services.jobs.huey.immediate = True
    yield
    services.jobs.huey.immediate = False


@pytest.fixture(autouse=True)
def _fresh_mode_memory() -> Iterator[None]:
    """`services.llm._mode_memory` is process-global: no test may see another's remembered mode."""
    services.llm._mode_memory.clear()
    yield
    services.llm._mode_memory.clear()


@pytest.fixture(autouse=True)
def _fast_sdk_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's exponential backoff starts at 0.5 s; shrink it so retry tests stay fast.

    Retries still happen (and are counted by the fake); only the sleep between them is shorter.
    """
    monkeypatch.setattr(openai._base_client, "INITIAL_RETRY_DELAY", 0.01)


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server
    assert not server.responder_errors, f"the fake's responder raised: {server.responder_errors!r}"


@pytest.fixture
def engine() -> Iterator[Engine]:
    eng = make_engine("sqlite://")
    yield eng
    eng.dispose()


@pytest.fixture
def backend(fake: FakeOpenAIServer) -> BackendConfig:
    return BackendConfig(kind="openai", base_url=fake.base_url, model="fake-model", max_retries=2, timeout=2.0)


@pytest.fixture
def client(backend: BackendConfig) -> LLMClient:
    """A client without a cache, talking to the fake server."""
    return get_client(backend)
