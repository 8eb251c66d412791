"""Settings: read once, read again when their sources change; BackendConfig agrees with their defaults."""

from __future__ import annotations

import dataclasses

from services import config
from services.config import BackendConfig, Settings, backend_from_settings, get_settings


def test_settings_are_read_once_while_the_sources_stay_the_same(monkeypatch):
    monkeypatch.setenv("LLM_MODEL", "first")
    s = get_settings()
    assert get_settings() is s
    assert s.llm_model == "first"


def test_a_changed_environment_is_read_again(monkeypatch):
    monkeypatch.setenv("LLM_MODEL", "first")
    before = get_settings()
    monkeypatch.setenv("LLM_MODEL", "second")
    after = get_settings()
    assert after is not before
    assert after.llm_model == "second"


def test_an_edited_secrets_file_is_read_again(tmp_path, monkeypatch):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('llm_model = "one"\n', encoding="utf-8")
    monkeypatch.delenv("LLM_MODEL", raising=False)
    monkeypatch.setenv("CONSISTENCY_SECRETS_FILE", str(secrets))
    assert get_settings().llm_model == "one"
    secrets.write_text('llm_model = "two, a longer value"\n', encoding="utf-8")
    import os

    st = secrets.stat()
    os.utime(secrets, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert get_settings().llm_model == "two, a longer value"


def test_backend_defaults_are_the_settings_defaults():
    fields = {f.name: f.default for f in dataclasses.fields(BackendConfig)}
    for name in ("temperature", "max_tokens", "concurrency", "timeout", "max_retries"):
        assert fields[name] == Settings.model_fields[f"llm_{name}"].default


def test_a_backend_from_changed_settings_takes_them(monkeypatch):
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    monkeypatch.setenv("LLM_MAX_TOKENS", "99")
    assert backend_from_settings().max_tokens == 99


def test_job_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("HUEY_URL", "redis://queue:6379/0")
    monkeypatch.setenv("CONSISTENCY_SPAWN_WORKER", "0")
    s = get_settings()
    assert s.huey_url == "redis://queue:6379/0"
    assert s.consistency_spawn_worker is False
    monkeypatch.setenv("CONSISTENCY_SPAWN_WORKER", "1")
    assert get_settings().consistency_spawn_worker is True


def test_no_module_outside_config_reads_the_environment_for_settings():
    import pathlib
    import re

    root = pathlib.Path(config.__file__).resolve().parent.parent
    reads = re.compile(r"os\.environ\.get\(|os\.getenv\(|os\.environ\[[^\]]+\](?!\s*=)")
    found = []
    for folder in ("services", "components", "pages", "clitools", "db"):
        for path in (root / folder).rglob("*.py"):
            if path.name == "config.py" and path.parent.name == "services":
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if reads.search(line):
                    found.append(f"{path.relative_to(root)}:{n}")
    for name in ("cli.py", "app.py"):
        text = (root / name).read_text(encoding="utf-8")
        found += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1) if reads.search(line)]
    assert not found, found


def test_prices_are_settings_and_stay_out_of_records_and_cache_keys(monkeypatch):
    from services.llm import get_client

    monkeypatch.setenv("LLM_BASE_URL", "http://models.example.org/v1")
    monkeypatch.setenv("LLM_PRICE_INPUT_PER_MILLION", "0.15")
    monkeypatch.setenv("LLM_PRICE_OUTPUT_PER_MILLION", "0.6")
    b = backend_from_settings()
    assert (b.price_input_per_million, b.price_output_per_million) == (0.15, 0.6)
    assert not {"price_input_per_million", "price_output_per_million"} & set(b.public()), "a run's record"
    free = b.with_changes(price_input_per_million=None, price_output_per_million=None)
    messages = [{"role": "user", "content": "Is it consistent?"}]
    assert get_client(b)._key(messages, "v1", {}, 0) == get_client(free)._key(messages, "v1", {}, 0)
