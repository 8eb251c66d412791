"""One place that decides what is secret: names of secret settings, and credentials inside URLs.

Used wherever something is stored, logged, exported or shown: the run records, the reports, the
meta-evaluation bundle, the sidebar and the CLI.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

REDACTED = "[redacted]"

# Names of settings, parameters, environment variables and query parameters that carry a credential.
# "token" only as a whole word (HF_TOKEN, access_token), so that max_tokens is not one.
SECRET_NAME = re.compile(
    r"(api[_-]?key|secret|password|passwd|authorization|bearer|credential|(?:^|[_-])(?:access[_-]?)?token(?:$|[_-]))",
    re.IGNORECASE,
)


def is_secret_name(name: object) -> bool:
    """True when a setting or parameter of this name holds a credential."""
    return bool(SECRET_NAME.search(str(name)))


def redact_url(url: str | None) -> str | None:
    """The URL without user name, password and secret-named query parameters (a URL with none of them
    comes back unchanged)."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # not a URL we can take apart: show none of it if it may hold a credential
        return REDACTED if "@" in url else url
    if "@" not in parts.netloc and not any(is_secret_name(k) for k, _ in parse_qsl(parts.query)):
        return url
    netloc = parts.hostname or ""
    if ":" in netloc:
        netloc = f"[{netloc}]"  # an IPv6 address
    if port:
        netloc += f":{port}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, v) for k, v in pairs if not is_secret_name(k)])
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def split_userinfo(url: str) -> tuple[str, str | None]:
    """The URL without its user info, and the credential that was in it: the password, or with none the user
    name (as in https://KEY@host). A URL without user info comes back unchanged, with None."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    host = parts.netloc.rsplit("@", 1)[1]
    secret = unquote(parts.password or parts.username or "") or None
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), secret


def url_secrets(url: str | None) -> list[str]:
    """The credentials inside a URL, to scrub them from text: the password (or, with none, the user name,
    as in https://KEY@host), and secret-named query values."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = [parts.password or parts.username] if parts.password or parts.username else []
    found += [v for k, v in parse_qsl(parts.query) if is_secret_name(k) and v]
    return found


_USERINFO = re.compile(r"(?<=://)[^/\s@]+@")
_QUERY_PARAM = re.compile(r"([?&])([^=&\s#]+)=([^&\s#]*)")


def scrub_urls(text: str) -> str:
    """The text with credentials taken out of every URL in it (user info, secret-named query values)."""
    text = _USERINFO.sub("", text)
    return _QUERY_PARAM.sub(lambda m: f"{m[1]}{m[2]}={REDACTED}" if is_secret_name(m[2]) else m[0], text)


class RedactingFilter(logging.Filter):
    """A log filter that takes credentials out of URLs in messages (HTTP libraries log the URLs they call)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = scrub_urls(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def redact_logs() -> None:
    """Put the filter on every handler of the root logger (call after logging is configured)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
