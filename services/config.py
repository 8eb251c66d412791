"""Settings from the environment and `.streamlit/secrets.toml`, and the per-session backend config."""

from __future__ import annotations

import os
import threading
import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from db.redact import redact_url
from services.errors import InputError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SECRETS_FILE = PROJECT_ROOT / ".streamlit" / "secrets.toml"

EMBEDDED_MODEL_NAME = "SmolLM2-135M-Instruct"


def secrets_file() -> Path:
    """The secrets file settings are read from: `CONSISTENCY_SECRETS_FILE`, else `.streamlit/secrets.toml`."""
    return Path(os.environ.get("CONSISTENCY_SECRETS_FILE", SECRETS_FILE))


class _SecretsTomlSource(PydanticBaseSettingsSource):
    """Reads root keys of `.streamlit/secrets.toml`, case-insensitively, like Streamlit does."""

    def get_field_value(self, field, field_name):  # pragma: no cover - required by the ABC
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = secrets_file()
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
    # The largest file a user may give (upload, import, CLI input), in MB. 256 MB holds 100,000 typical pairs
    # (a 300-word reference and a 3-5 sentence candidate: about 2.3 KB a pair). serve.py gives the browser's
    # uploader the same limit (Streamlit's server.maxUploadSize).
    max_upload_mb: int = Field(default=256, gt=0)
    llm_timeout: float = 120.0
    llm_max_retries: int = 3
    # USD per million input / output tokens of the configured model: cost estimates before a run.
    llm_price_input_per_million: float | None = Field(default=None, ge=0)
    llm_price_output_per_million: float | None = Field(default=None, ge=0)
    # A worker's own endpoints for the batch's model (comma-separated): it spreads its items over them.
    llm_worker_base_urls: str | None = None
    # Worker timings, in seconds, one set for the database and every kind of job (services/jobs/runner.py). A
    # worker whose heartbeat is older than worker_stale_after has its work returned to the queue; a heartbeat
    # write can wait up to db_busy_timeout on a locked SQLite file, so the stale limit must stay well above both.
    db_busy_timeout: float = Field(default=30.0, gt=0)
    worker_heartbeat: float = Field(default=3.0, gt=0)
    worker_stale_after: float = Field(default=90.0, gt=0)

    database_url: str | None = None
    data_dir: Path = PROJECT_ROOT / "data"
    embedded_ctx: int = 8192
    max_input_chars: int = 200_000
    # Paper 003, Appendix B: retrieve document sentences only for a document over this many estimated tokens
    # ("auto"), always, or never.
    nli_fit_tokens: int = 4096
    nli_retrieval: Literal["auto", "always", "never"] = "auto"
    # The offline evidence checker in batches and `cli.py evaluate`: MiniLM alignment too (slower) when true.
    evidence_embeddings_in_bulk: bool = False
    # The owner's sign-in when no OpenID Connect `[auth]` is configured (services/auth.py).
    studio_password: SecretStr | None = None
    # Accounts an OpenID Connect sign-in admits: emails or "@domain", comma-separated (or a list in
    # secrets.toml); empty admits every account the provider signs in.
    studio_owners: str = ""
    # Reverse proxies whose X-Forwarded-For names the browser's address (IP addresses or networks, comma-
    # separated; "127.0.0.1" for one on this machine): the sign-in back-off counts by that address. Empty: none.
    trusted_proxies: str = ""
    # The job queue: a redis:// URL, else a SQLite file in the data folder (services/jobs/queue.py).
    huey_url: str = ""
    # Start a worker beside the app; deployments that run their own workers set CONSISTENCY_SPAWN_WORKER=0.
    consistency_spawn_worker: bool = True
    # Home's "Open the demo workspace" (services/demo): a database of its own in the data folder, built offline.
    # A team deployment that wants no demo sets DEMO_WORKSPACE=0.
    demo_workspace: bool = True

    @field_validator("studio_owners", "trusted_proxies", mode="before")
    @classmethod
    def _owners_list(cls, value: Any) -> Any:
        return ",".join(map(str, value)) if isinstance(value, list | tuple) else value

    @property
    def trusted_proxy_list(self) -> list[str]:
        """TRUSTED_PROXIES as a list."""
        return [p.strip() for p in self.trusted_proxies.split(",") if p.strip()]

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

    def model_post_init(self, _context: Any) -> None:
        """Refuse worker timings under which a wait on a lock looks like a dead worker."""
        floor = self.db_busy_timeout + 2 * self.worker_heartbeat
        if self.worker_stale_after <= floor:
            raise ValueError(
                f"WORKER_STALE_AFTER ({self.worker_stale_after:g} s) must exceed DB_BUSY_TIMEOUT plus two "
                f"WORKER_HEARTBEAT periods ({floor:g} s): a worker waiting on a lock would otherwise be taken "
                "for dead while it still works."
            )


def _source_state() -> tuple:
    """What the settings are read from: the environment and the secrets file's path and modification time."""
    path = secrets_file()
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        mtime = None
    return tuple(sorted(os.environ.items())), str(path), mtime


_cached: tuple[tuple, Settings] | None = None
_cache_lock = threading.Lock()


def get_settings() -> Settings:
    """The settings, read once and cached; read again only when the environment or the secrets file changes
    (an edited `.streamlit/secrets.toml` takes effect without a restart, as in Streamlit)."""
    global _cached
    state = _source_state()
    cached = _cached
    if cached is not None and cached[0] == state:
        return cached[1]
    with _cache_lock:
        if _cached is None or _cached[0] != state:
            _cached = (state, Settings())
        return _cached[1]


BackendKind = Literal["embedded", "openai"]


def _default(name: str) -> Any:
    """A Settings field's default, so that a BackendConfig built without settings agrees with them."""
    return Settings.model_fields[name].default


@dataclass(frozen=True)
class BackendConfig:
    """Which model to call and how. The API key is kept out of every dump."""

    kind: BackendKind = "embedded"
    base_url: str | None = None
    model: str = EMBEDDED_MODEL_NAME
    api_key: SecretStr | None = field(default=None, repr=False, compare=False)
    temperature: float = _default("llm_temperature")
    max_tokens: int = _default("llm_max_tokens")
    concurrency: int = _default("llm_concurrency")
    timeout: float = _default("llm_timeout")
    max_retries: int = _default("llm_max_retries")
    # USD per million tokens, for cost estimates only: never part of a cache key or a run's record.
    price_input_per_million: float | None = None
    price_output_per_million: float | None = None

    @property
    def is_embedded(self) -> bool:
        return self.kind == "embedded"

    @property
    def label(self) -> str:
        if self.is_embedded:
            return f"Embedded demo model ({EMBEDDED_MODEL_NAME}, offline)"
        return f"{self.model} at {self.public_url}"

    @property
    def public_url(self) -> str | None:
        """The base URL as it may be stored, logged or shown: credentials in it stay in memory only."""
        return redact_url(self.base_url)

    def public(self) -> dict[str, Any]:
        """A dict safe to store or export: everything but the key and credentials in the URL."""
        d = asdict(self)
        d.pop("api_key", None)
        for k in PRICE_FIELDS:
            d.pop(k, None)
        d["base_url"] = self.public_url
        d["has_api_key"] = bool(self.api_key and self.api_key.get_secret_value())
        return d

    def with_changes(self, **changes: Any) -> BackendConfig:
        return replace(self, **changes)


PRICE_FIELDS = ("price_input_per_million", "price_output_per_million")
RECORDED_PARAMS = ("temperature", "max_tokens", "timeout", "max_retries", "concurrency")


def backend_from_record(
    kind: str, *, base_url: str | None = None, model: str = "", params: dict[str, Any] | None = None, **overrides: Any
) -> BackendConfig:
    """A backend a run, batch or study recorded, made live again: its key (never stored) comes from this
    process's settings; `overrides` win over the recorded parameters."""
    kw = {k: v for k, v in (params or {}).items() if k in RECORDED_PARAMS} | overrides
    if kind == "embedded":
        return BackendConfig(kind="embedded", **kw)
    s = get_settings()
    # Credentials in the URL are never stored either: this process's LLM_BASE_URL supplies them when it
    # names the same endpoint.
    own = (s.llm_base_url or "").rstrip("/")
    if base_url and own and own != base_url and redact_url(own) == base_url:
        base_url = own
    return BackendConfig(kind="openai", base_url=base_url, model=model, api_key=s.llm_api_key, **kw)


def check_base_url(url: str | None, *, name: str = "LLM_BASE_URL") -> None:
    """Raise InputError, saying what is wrong, unless `url` is an http(s) URL with a host and a valid port."""
    if not url:
        return
    shown = redact_url(url)
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        reason = str(exc)
        if "Port" in reason or "port" in reason:
            reason = "its port must be a number from 1 to 65535"
        raise InputError(f"{name} {shown!r} is not a valid URL: {reason}.") from None
    if parts.scheme not in ("http", "https"):
        raise InputError(f"{name} {shown!r} must start with http:// or https:// (e.g. http://127.0.0.1:8000/v1).")
    if not parts.hostname:
        raise InputError(f"{name} {shown!r} names no host (e.g. http://127.0.0.1:8000/v1).")
    if port == 0:
        raise InputError(f"{name} {shown!r} is not a valid URL: its port must be a number from 1 to 65535.")


def backend_from_settings(settings: Settings | None = None) -> BackendConfig:
    """The default backend: `LLM_BASE_URL` set means an OpenAI-compatible endpoint, else embedded."""
    s = settings or get_settings()
    common = dict(
        temperature=s.llm_temperature,
        max_tokens=s.llm_max_tokens,
        concurrency=s.llm_concurrency,
        timeout=s.llm_timeout,
        max_retries=s.llm_max_retries,
        price_input_per_million=s.llm_price_input_per_million,
        price_output_per_million=s.llm_price_output_per_million,
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
