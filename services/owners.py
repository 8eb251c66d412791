"""The owner across browser sessions: a signed, expiring sign-in cookie, the sign-in back-off, the chosen backend.

- **Sign-in cookie** (password mode; OpenID Connect keeps its own login cookie). Its value is a random token
  and a signature keyed by the studio password: the database holds the token's hash with its expiry, so
  signing out (or its expiry) ends it at once in every tab, and changing the password ends them all.
- **Back-off**: an attempt is never turned away. Checks pass one gate for every address together (10 at once,
  then one a second), and its turns go to the browser sessions with the fewest recent wrong passwords first,
  so the owner's right password is checked within a second however many wrong ones the same address sends;
  a right one signs in at once. A wrong one is counted and its answer held back, longer after each of that
  address's recent failures (and after many failures from everywhere); a session's attempts go one after
  another. Failures are counted in the database, so a restart does not reset them. The address is the
  browser's, or the one a proxy the deployment trusts (TRUSTED_PROXIES) forwards.
- **Backend**: what the owner chose on Settings, stored per owner without any key; a key typed in the form
  must be typed again in a new session, and the app says so.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import hmac
import itertools
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine

from db import owners as db
from db.engine import get_session
from db.redact import redact_url
from services.auth import password_matches
from services.config import BackendConfig, get_settings

COOKIE = "cs_owner"
SESSION_DAYS = 14
PASSWORD_OWNER = "password"  # the one owner a studio password signs in
LOCAL_OWNER = "local"  # the local user of an app open on loopback


def _now() -> datetime:
    return datetime.now(UTC)


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=4)
def _signing_key(password: str) -> bytes:
    # Slow to derive (once per password and process), so a stolen cookie is no quick way to the password.
    return hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), b"consistency-studio owner cookie", 200_000)


def _sign(token: str, password: str) -> str:
    return hmac.new(_signing_key(password), token.encode("ascii"), hashlib.sha256).hexdigest()


def new_owner_session(
    engine: Engine, *, password: str, owner: str = PASSWORD_OWNER, now: datetime | None = None
) -> str:
    """Start a signed-in session: store the token's hash with its expiry and return the cookie's value."""
    now = now or _now()
    token = secrets.token_urlsafe(24)
    with get_session(engine) as s:
        db.purge_expired_sessions(session=s, now=now)
        db.add_owner_session(
            session=s, token_hash=_hash(token), owner=owner, expires_at=now + timedelta(days=SESSION_DAYS)
        )
    return f"{token}.{_sign(token, password)}"


def _token(cookie: str | None, password: str) -> str | None:
    """The token of a cookie whose signature the current password makes, else None."""
    if not cookie or not password or len(cookie) > 200 or "." not in cookie:
        return None
    token, sig = cookie.rsplit(".", 1)
    return token if hmac.compare_digest(sig, _sign(token, password)) else None


def session_owner(engine: Engine, cookie: str | None, *, password: str, now: datetime | None = None) -> str | None:
    """The owner a cookie signs in: signed with the current password, not expired, not signed out."""
    token = _token(cookie, password)
    if token is None:
        return None
    with get_session(engine) as s:
        return db.active_owner(session=s, token_hash=_hash(token), now=now or _now())


def end_owner_session(engine: Engine, cookie: str | None) -> None:
    """Sign out: the cookie's session stops working at once, in every tab that holds it."""
    if not cookie or "." not in cookie:
        return
    token = cookie.rsplit(".", 1)[0]
    with get_session(engine) as s:
        db.revoke_owner_session(session=s, token_hash=_hash(token), at=_now())


def cookie_max_age() -> int:
    return SESSION_DAYS * 24 * 3600


# -- the sign-in back-off ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Backoff:
    """How long an attempt waits before its password is checked, from the failures of the last `window`.

    An address's own failures beyond `free` double its wait each time up to `max_delay`; failures from every
    address together beyond `free_all` slow everyone (many addresses, or one proxy that forwards them all)."""

    free: int = 4
    free_all: int = 30
    base: float = 1.0
    max_delay: float = 10.0
    window: timedelta = timedelta(minutes=15)

    def delay(self, own: int, total: int) -> float:
        d = 0.0
        if own >= self.free:
            d = self.base * 2 ** (own - self.free)
        if total >= self.free_all:
            d = max(d, self.base * 2 ** ((total - self.free_all) // 10))
        return min(d, self.max_delay)


BACKOFF = Backoff()


class CheckGate:
    """The overall ceiling on password checks, for every address together: `burst` at once, then `per_second`.

    An attempt over it waits its turn rather than being turned away, and the turns go to the browser sessions
    with the fewest recent wrong passwords first (then to the earliest): a flood of wrong ones, whose sessions
    have failed, never stands before a session that has not, so the owner's attempt waits at most one refill
    (1 / per_second) whatever comes from the same address."""

    def __init__(self, burst: int = 10, per_second: float = 1.0, clock: Callable[[], float] = time.monotonic):
        self.burst, self.per_second, self._clock = burst, per_second, clock
        self._cond = threading.Condition()
        self._tokens, self._at = float(burst), clock()
        self._queue: list[tuple[int, int]] = []  # waiting attempts: (their session's failures, arrival)
        self._arrivals = itertools.count()

    @property
    def waiting(self) -> int:
        """Attempts waiting for a check."""
        with self._cond:
            return len(self._queue)

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + max(0.0, now - self._at) * self.per_second)
        self._at = now

    def admit(self, failures: int) -> None:
        """Wait until this attempt may be checked: a check is free, and no waiting attempt goes before it."""
        me = (failures, next(self._arrivals))
        with self._cond:
            heapq.heappush(self._queue, me)
            try:
                while True:
                    self._refill()
                    if self._queue[0] == me and self._tokens >= 1:
                        self._tokens -= 1
                        return
                    first = self._queue[0] == me
                    # the next check is free after this long; the clock may be a test's, so look again soon
                    self._cond.wait(min((1 - self._tokens) / self.per_second, 0.05) if first else 0.05)
            finally:
                self._queue.remove(me)
                heapq.heapify(self._queue)
                self._cond.notify_all()


GATE = CheckGate()
_state = threading.Lock()  # guards the tables below, never held while waiting or querying
_in_flight: dict[str, int] = {}
_serial: dict[str, threading.Lock] = {}  # one per browser session with attempts in flight: they go in turn
_failures: OrderedDict[str, int] = OrderedDict()  # wrong passwords per browser session (the most recent ones)
_KEEP_SESSIONS = 10_000


def client_id(address: str | None) -> str:
    """The stored form of a client's address (hashed: addresses are not kept)."""
    return _hash(f"sign-in:{address or ''}")


def sign_in_delay(
    engine: Engine, address: str | None, *, now: datetime | None = None, policy: Backoff = BACKOFF
) -> float:
    """Seconds the answer to the next wrong password from this address is held back."""
    now = now or _now()
    since = now - policy.window
    with get_session(engine) as s:
        own = db.count_sign_in_failures(session=s, client=client_id(address), since=since)
        total = db.count_sign_in_failures(session=s, client=None, since=since)
    return policy.delay(own, total)


def attempt_sign_in(
    engine: Engine,
    address: str | None,
    typed: str,
    password: str,
    *,
    session: str | None = None,
    policy: Backoff = BACKOFF,
    gate: CheckGate | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Check a typed password: never turned away, it waits for the gate's next check (the owner's at most one
    refill, however many wrong ones come from the same address). A right one signs in at once; a wrong one is
    counted for its address and its browser session and its answer held back by the address's back-off.

    A browser session's attempts go one after another (`session`, else the address stands for it), so one
    session gets one check per held answer, and its failures put its next attempt behind the others'."""
    gate = gate or GATE
    client = client_id(address)
    line = f"session:{session}" if session else client
    with _state:
        _in_flight[line] = _in_flight.get(line, 0) + 1
        serial = _serial.setdefault(line, threading.Lock())
    try:
        with serial:
            with _state:
                failures = _failures.get(line, 0)
            gate.admit(failures)
            if password_matches(typed, password):
                with _state:
                    _failures.pop(line, None)
                return True
            wait = sign_in_delay(engine, address, policy=policy)
            now = _now()
            with get_session(engine) as s:
                db.add_sign_in_failure(session=s, client=client, at=now)
                db.purge_sign_in_failures(session=s, before=now - 4 * policy.window)
            with _state:
                _failures[line] = failures + 1
                _failures.move_to_end(line)
                while len(_failures) > _KEEP_SESSIONS:
                    _failures.popitem(last=False)
            if wait > 0:
                sleep(wait)
        return False
    finally:
        with _state:
            _in_flight[line] -= 1
            if not _in_flight[line]:
                del _in_flight[line], _serial[line]


# -- the owner's backend ---------------------------------------------------------------------------------
STORED = ("kind", "base_url", "model", "temperature", "max_tokens", "concurrency", "timeout", "max_retries")
STORED += ("price_input_per_million", "price_output_per_million")


@dataclass(frozen=True)
class StoredBackend:
    """An owner's stored choice: the backend's public fields, and whether a secret (a key typed on Settings,
    or credentials in the base URL) was part of it and must be given again."""

    fields: dict[str, Any]
    needs_secret: bool


def save_backend(engine: Engine, owner: str, backend: BackendConfig, *, typed_key: bool) -> None:
    """Store the owner's backend (never its key, nor credentials in its URL)."""
    d = {k: getattr(backend, k) for k in STORED}
    lost_url_secret = bool(backend.base_url) and redact_url(backend.base_url) != backend.base_url
    d["base_url"] = backend.public_url
    d["url_credentials"] = lost_url_secret
    with get_session(engine) as s:
        db.put_owner_backend(session=s, owner=owner, config=d, typed_key=typed_key, at=_now())


def load_backend(engine: Engine, owner: str) -> StoredBackend | None:
    """The owner's stored backend with its credentials from this process's settings where they name the
    same endpoint; `needs_secret` when a key or URL credentials were typed and nothing here supplies them."""
    with get_session(engine) as s:
        got = db.get_owner_backend(session=s, owner=owner)
    if got is None:
        return None
    config, typed = got
    known = {f.name for f in fields(BackendConfig)}
    d = {k: v for k, v in config.items() if k in known and k in STORED}
    settings = get_settings()
    own_url = (settings.llm_base_url or "").rstrip("/")
    url_secret_lost = bool(config.get("url_credentials"))
    if d.get("base_url") and own_url and redact_url(own_url) == d["base_url"]:
        d["base_url"] = own_url  # this process's LLM_BASE_URL names it, with its credentials
        url_secret_lost = False
    key_lost = bool(typed) and settings.llm_api_key is None
    needs = d.get("kind") == "openai" and (key_lost or url_secret_lost)
    return StoredBackend(fields=d, needs_secret=needs)


def owner_id(mode: str, email: str | None = None) -> str:
    """Whose backend a session uses: the password's owner, the local user, or an OIDC account's email."""
    if mode == "oidc":
        return (email or "oidc").strip().lower()[:320]
    return PASSWORD_OWNER if mode == "password" else LOCAL_OWNER
