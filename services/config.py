"""Settings from the environment and `.streamlit/secrets.toml`, and the per-session backend config."""

from __future__ import annotations

import os
import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SECRETS_FILE = PROJECT_ROOT / ".streamlit" / "secrets.toml"

EMBEDDED_MODEL_NAME = "SmolLM2-135M-Instruct"


class _SecretsTomlSource(PydanticBaseSettingsSource):
    """Reads root keys of `.streamlit/secrets.toml`, case-insensitively, like Streamlit does."""

    def get_field_value(self, field, field_name):  # pragma: no cover - required by the ABC
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = Path(os.environ.get("CONSISTENCY_SECRETS_FILE", SECRETS_FILE))
        if not path.is_file():
            return {}
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            return {}
        out: dict[str, Any] = {}
        names = {
            "llm_api_key": ("llm_api_key", "openai_api_key"),
        }
        for key, value in data.items():
            if isinstance(value, dict):
                continue
            low = key.lower()
            target = next((f for f, al in names.items() if low in al), low)
            out.setdefault(target, value)
        return out


class Settings(BaseSettings):
    """Process-wide settings: environment variables win over `.streamlit/secrets.toml`."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = Field(default=None, validation_alias=AliasChoices("llm_api_key", "openai_api_key"))
    llm_model: str | None = None
    llm_temperature: float = 0.0
    llm_max_tokens: int = 768
    llm_concurrency: int = 4
    llm_timeout: float = 120.0
    llm_max_retries: int = 3
    # A worker's own endpoints for the batch's model (comma-separated): it spreads its items over them.
    llm_worker_base_urls: str | None = None
    database_url: str | None = None
    data_dir: Path = PROJECT_ROOT / "data"
    embedded_ctx: int = 8192
    max_input_chars: int = 200_000
    # Paper 003, Appendix B: retrieve document sentences only for a document over this many estimated tokens
    # ("auto"), always, or never.
    nli_fit_tokens: int = 4096
    nli_retrieval: Literal["auto", "always", "never"] = "auto"

    @classmethod
    def settings_customise_sources(
        cls, settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings
    ):
        return (init_settings, env_settings, _SecretsTomlSource(settings_cls))

    def resolved_database_url(self) -> str:
        """The database URL: `DATABASE_URL`, else a SQLite file in the data folder."""
        if self.database_url:
            url = self.database_url
            if url.startswith("postgres://"):
                url = "postgresql://" + url[len("postgres://") :]
            return url
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{self.data_dir / 'consistency.db'}"


def get_settings() -> Settings:
    """Read settings afresh (cheap; lets tests change the environment)."""
    return Settings()


BackendKind = Literal["embedded", "openai"]


@dataclass(frozen=True)
class BackendConfig:
    """Which model to call and how. The API key is kept out of every dump."""

    kind: BackendKind = "embedded"
    base_url: str | None = None
    model: str = EMBEDDED_MODEL_NAME
    api_key: SecretStr | None = field(default=None, repr=False, compare=False)
    temperature: float = 0.0
    max_tokens: int = 768
    concurrency: int = 4
    timeout: float = 120.0
    max_retries: int = 3

    @property
    def is_embedded(self) -> bool:
        return self.kind == "embedded"

    @property
    def label(self) -> str:
        if self.is_embedded:
            return f"Embedded demo model ({EMBEDDED_MODEL_NAME}, offline)"
        return f"{self.model} at {self.base_url}"

    def public(self) -> dict[str, Any]:
        """A dict safe to store or export: everything but the key."""
        d = asdict(self)
        d.pop("api_key", None)
        d["has_api_key"] = bool(self.api_key and self.api_key.get_secret_value())
        return d

    def with_changes(self, **changes: Any) -> BackendConfig:
        return replace(self, **changes)


RECORDED_PARAMS = ("temperature", "max_tokens", "timeout", "max_retries", "concurrency")


def backend_from_record(
    kind: str, *, base_url: str | None = None, model: str = "", params: dict[str, Any] | None = None, **overrides: Any
) -> BackendConfig:
    """A backend a run, batch or study recorded, made live again: its key (never stored) comes from this
    process's settings; `overrides` win over the recorded parameters."""
    kw = {k: v for k, v in (params or {}).items() if k in RECORDED_PARAMS} | overrides
    if kind == "embedded":
        return BackendConfig(kind="embedded", **kw)
    return BackendConfig(kind="openai", base_url=base_url, model=model, api_key=get_settings().llm_api_key, **kw)


def backend_from_settings(settings: Settings | None = None) -> BackendConfig:
    """The default backend: `LLM_BASE_URL` set means an OpenAI-compatible endpoint, else embedded."""
    s = settings or get_settings()
    common = dict(
        temperature=s.llm_temperature,
        max_tokens=s.llm_max_tokens,
        concurrency=s.llm_concurrency,
        timeout=s.llm_timeout,
        max_retries=s.llm_max_retries,
    )
    if s.llm_base_url:
        return BackendConfig(
            kind="openai",
            base_url=s.llm_base_url.rstrip("/"),
            model=s.llm_model or "gpt-4o-mini",
            api_key=s.llm_api_key,
            **common,
        )
    if s.llm_api_key and s.llm_model:
        return BackendConfig(
            kind="openai",
            base_url="https://api.openai.com/v1",
            model=s.llm_model,
            api_key=s.llm_api_key,
            **common,
        )
    return BackendConfig(kind="embedded", **common)
