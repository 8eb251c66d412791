"""Credentials in a base URL (http://user:key@host/v1) are used for the request and found nowhere else:
not in the database, the CLI's output, the logs or error messages."""

from __future__ import annotations

import json
import logging

import pytest
from pydantic import SecretStr

import cli
from db.redact import is_secret_name, redact_url, url_secrets
from services.config import BackendConfig, backend_from_record
from services.database import get_engine
from services.jobs import batches
from services.llm import get_client
from tests.fakes import toy_judge
from tests.support.batches import BAD, FIX, REF

KEY = "Zq7-url-secret-" + "k" * 12


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"http://user:{KEY}@127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        (f"https://{KEY}@api.example.com/v1", "https://api.example.com/v1"),
        (
            f"https://api.example.com/v1?api-version=2024-02-01&api_key={KEY}",
            "https://api.example.com/v1?api-version=2024-02-01",
        ),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("https://Host.example.com/v1?x=1", "https://Host.example.com/v1?x=1"),
        (None, None),
    ],
)
def test_redact_url(url, shown):
    assert redact_url(url) == shown
    assert KEY not in str(redact_url(url))
    assert url_secrets(url) == ([KEY] if url and KEY in url else [])


def test_secret_names_are_one_pattern_for_settings_parameters_and_environment():
    assert all(map(is_secret_name, ["LLM_API_KEY", "x-api-key", "HF_TOKEN", "access_token", "DB_PASSWORD", "bearer"]))
    assert not any(map(is_secret_name, ["max_tokens", "LLM_MAX_TOKENS", "temperature", "TOKENIZERS_PARALLELISM"]))


@pytest.fixture
def secret_url(fake, monkeypatch, tmp_path):
    fake.responder = toy_judge(BAD, FIX)
    url = fake.base_url.replace("http://", f"http://studio:{KEY}@")
    monkeypatch.setenv("LLM_BASE_URL", url)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    return url


def test_url_credentials_reach_neither_the_database_nor_the_cli_output(secret_url, fake, tmp_path, capsys, caplog):
    pairs = tmp_path / "pairs.jsonl"
    rows = [
        {"id": f"d{i}", "reference": REF, "candidate": f"The council approved {BAD} dollars on day {i}."}
        for i in range(2)
    ]
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    caplog.set_level(logging.DEBUG)
    assert cli.main(["evaluate", "--input", str(pairs), "--output", str(out)]) == 0
    assert cli.main(["batch", "--dataset", str(pairs), "--format", "jsonl"]) == 0
    # the requests went out (with the credentials, in memory); the batch found the answers cached
    assert len(fake.requests) == 2
    printed = capsys.readouterr()
    engine = get_engine()
    listed = batches.list_batches(engine)  # evaluate's batch and the batch command's
    assert len(listed) == 2
    for b in listed:
        assert b.base_url == redact_url(secret_url) and b.base_url.startswith("http://127.0.0.1:")
    engine.dispose()
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("cli.db*"))
    leaks = {
        "database": KEY.encode() in stored,
        "output file": KEY in out.read_text(),
        "stdout/stderr": KEY in printed.out + printed.err,
        "logs": KEY in caplog.text,
    }
    assert not any(leaks.values()), leaks
    # A worker with the same LLM_BASE_URL gets the credentials back from its own environment.
    assert backend_from_record("openai", base_url=b.base_url, model="fake-model").base_url == secret_url


def test_an_error_message_never_shows_the_url_credentials():
    backend = BackendConfig(kind="openai", base_url=f"http://user:{KEY}@127.0.0.1:9/v1", model="m", max_retries=0)
    assert KEY not in backend.label and KEY not in json.dumps(backend.public())
    ok, message = get_client(backend).test_connection()
    assert not ok and "127.0.0.1:9" in message and KEY not in message


@pytest.mark.parametrize(
    ("userinfo", "api_key", "bearer"),
    [
        (f"studio:{KEY}@", None, KEY),  # no key set: the URL's password is the key
        (f"{KEY}@", None, KEY),  # https://KEY@host: the user name is the key
        (f"studio:{KEY}@", "Set-key-" + "s" * 20, "Set-key-" + "s" * 20),  # a key that is set wins
    ],
    ids=["password", "user-name", "api-key-set"],
)
def test_url_credentials_go_out_as_the_bearer_key_never_as_basic_auth(fake, userinfo, api_key, bearer):
    fake.enqueue_json({"reasons": []})
    url = fake.base_url.replace("http://", f"http://{userinfo}")
    key = SecretStr(api_key) if api_key else None
    backend = BackendConfig(kind="openai", base_url=url, model="fake-model", api_key=key, max_retries=0)
    res = get_client(backend).chat_text([{"role": "user", "content": "hi"}], prompt_version="t@1", stage="dce")
    assert res.ok, res.error
    sent = fake.request_headers[-1]
    assert sent["authorization"] == f"Bearer {bearer}"
    assert not any(v.lower().startswith("basic") for v in sent.values())
