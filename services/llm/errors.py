"""Backend failures as messages a user can act on (never with credentials from the URL)."""

from __future__ import annotations

from db.redact import REDACTED, url_secrets
from services.config import BackendConfig
from services.llm.sdk import openai


class BackendError(Exception):
    """A request failed for a reason the user must act on; `fatal` stops the run."""

    def __init__(self, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.fatal = fatal


def describe_error(exc: Exception, backend: BackendConfig, base_url: str) -> BackendError:
    """Turn an SDK exception into a message a user can act on (never with credentials from the URL)."""
    err = _describe_error(exc, backend, base_url)
    message = str(err)
    for secret in url_secrets(backend.base_url):
        message = message.replace(secret, REDACTED)
    return err if message == str(err) else BackendError(message, fatal=err.fatal)


def _describe_error(exc: Exception, backend: BackendConfig, base_url: str) -> BackendError:
    if isinstance(exc, openai.APITimeoutError):
        return BackendError(f"No answer from {base_url} within {backend.timeout:g} s (timeout).")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        if "complete message body" in str(cause):  # the server answered, but the body stopped short
            return BackendError(f"The answer from {base_url} was cut short on the way ({cause}).")
        return BackendError(f"Cannot reach {base_url}: {cause}. Is the server running?", fatal=True)
    if isinstance(exc, openai.AuthenticationError):
        return BackendError(
            f"{base_url} rejected the API key (401). Check LLM_API_KEY / OPENAI_API_KEY or the key typed in Settings.",
            fatal=True,
        )
    if isinstance(exc, openai.PermissionDeniedError):
        return BackendError(f"{base_url} refused access (403): {_body(exc)}", fatal=True)
    if isinstance(exc, openai.NotFoundError):
        return BackendError(
            f"{base_url} answered 404: model '{backend.model}' or the endpoint does not exist ({_body(exc)}).",
            fatal=True,
        )
    if isinstance(exc, openai.RateLimitError):
        return BackendError(f"Rate limited by {base_url} (429) after {backend.max_retries} retries.")
    if isinstance(exc, openai.APIStatusError):
        return BackendError(f"{base_url} answered {exc.status_code}: {_body(exc)}")
    return BackendError(f"{type(exc).__name__}: {exc}")


def _body(exc: openai.APIStatusError) -> str:
    try:
        msg = exc.body.get("error", {}).get("message") if isinstance(exc.body, dict) else None
    except AttributeError:
        msg = None
    return str(msg or exc.message)[:300]


def retry_after(exc: openai.APIStatusError, cap: float = 60.0) -> float:
    """The server's Retry-After in seconds (bounded), or a short default."""
    try:
        return min(cap, max(0.0, float(exc.response.headers.get("retry-after", "0.5"))))
    except (TypeError, ValueError):
        return 0.5
