"""The owner across browser sessions: the sign-in cookie, the sign-in back-off, the stored backend."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import SecretStr
from sqlalchemy import text

from db.engine import make_engine
from services import owners
from services.config import BackendConfig
from tests.support.waiting import WAIT_LIMIT

PASSWORD = "correct horse battery staple"


# -- the sign-in cookie ------------------------------------------------------------------------------------
def test_a_cookie_signs_the_owner_in_until_it_expires(engine):
    now = datetime(2026, 11, 1, tzinfo=UTC)
    cookie = owners.new_owner_session(engine, password=PASSWORD, now=now)
    assert owners.session_owner(engine, cookie, password=PASSWORD, now=now) == owners.PASSWORD_OWNER
    later = now + timedelta(days=owners.SESSION_DAYS) - timedelta(minutes=1)
    assert owners.session_owner(engine, cookie, password=PASSWORD, now=later) == owners.PASSWORD_OWNER
    expired = now + timedelta(days=owners.SESSION_DAYS, minutes=1)
    assert owners.session_owner(engine, cookie, password=PASSWORD, now=expired) is None


def test_signing_out_ends_the_cookie_at_once(engine):
    cookie = owners.new_owner_session(engine, password=PASSWORD)
    other = owners.new_owner_session(engine, password=PASSWORD)
    owners.end_owner_session(engine, cookie)
    assert owners.session_owner(engine, cookie, password=PASSWORD) is None
    assert owners.session_owner(engine, other, password=PASSWORD) == owners.PASSWORD_OWNER, "another browser stays"


def test_a_new_password_ends_every_cookie(engine):
    cookie = owners.new_owner_session(engine, password=PASSWORD)
    assert owners.session_owner(engine, cookie, password="a new password") is None


@pytest.mark.parametrize(
    "forge",
    [
        lambda c: c.split(".")[0] + "." + "0" * 64,  # a token with a made-up signature
        lambda c: "x" + c,  # another token with the real signature
        lambda c: c.split(".")[0],  # no signature
        lambda c: "",
        lambda c: None,
        lambda c: c + "." * 300,
    ],
)
def test_a_forged_cookie_signs_nobody_in(engine, forge):
    cookie = owners.new_owner_session(engine, password=PASSWORD)
    assert owners.session_owner(engine, forge(cookie), password=PASSWORD) is None


def test_the_database_holds_no_token_only_its_hash(engine):
    cookie = owners.new_owner_session(engine, password=PASSWORD)
    token = cookie.split(".")[0]
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT token_hash FROM owner_session")).all()
    assert len(rows) == 1 and token not in rows[0][0] and cookie not in rows[0][0]


# -- the back-off ----------------------------------------------------------------------------------------
def test_a_right_password_is_never_refused_however_many_wrong_ones_came_before(engine):
    waits: list[float] = []
    for _ in range(12):
        assert not owners.attempt_sign_in(engine, "10.0.0.1", "guess", PASSWORD, sleep=waits.append)
    assert owners.attempt_sign_in(engine, "10.0.0.1", PASSWORD, PASSWORD, sleep=waits.append)
    assert waits, "the wrong ones slowed the address down"
    assert max(waits) <= owners.BACKOFF.max_delay


def test_the_back_off_is_per_address_and_grows():
    b = owners.Backoff(free=3, free_all=100, base=1.0, max_delay=10.0)
    assert [b.delay(n, n) for n in range(7)] == [0, 0, 0, 1, 2, 4, 8]
    assert b.delay(20, 20) == 10.0, "capped"
    assert b.delay(0, 50) == 0, "others' failures below the shared limit do not slow this address"
    assert b.delay(0, 100) == 1.0 and b.delay(0, 130) == 8.0, "many failures everywhere slow everyone"


def test_failures_are_counted_in_the_database_so_a_restart_keeps_them(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    first = make_engine(url)
    for _ in range(owners.BACKOFF.free + 1):
        owners.attempt_sign_in(first, "10.0.0.9", "guess", PASSWORD, sleep=lambda _s: None)
    first.dispose()
    restarted = make_engine(url)  # a new process: nothing in memory
    assert owners.sign_in_delay(restarted, "10.0.0.9") > 0
    assert owners.sign_in_delay(restarted, "10.0.0.10") == 0
    with restarted.connect() as conn:
        stored = [r[0] for r in conn.execute(text("SELECT client FROM sign_in_failure")).all()]
    assert stored and all("10.0.0.9" not in c for c in stored), "addresses are stored hashed"
    restarted.dispose()


def test_failures_age_out_of_the_window(engine):
    for _ in range(owners.BACKOFF.free + 2):
        owners.attempt_sign_in(engine, "10.0.0.2", "guess", PASSWORD, sleep=lambda _s: None)
    assert owners.sign_in_delay(engine, "10.0.0.2") > 0
    later = datetime.now(UTC) + owners.BACKOFF.window + timedelta(seconds=1)
    assert owners.sign_in_delay(engine, "10.0.0.2", now=later) == 0


def _held_wrong_attempt(engine, address: str):
    """Start a wrong attempt from `address` whose back-off wait is held until the returned event is set."""
    entered, release = threading.Event(), threading.Event()

    def held_sleep(_seconds: float) -> None:
        entered.set()
        release.wait(WAIT_LIMIT)

    t = threading.Thread(
        target=owners.attempt_sign_in, args=(engine, address, "g1", PASSWORD), kwargs={"sleep": held_sleep}
    )
    t.start()
    assert entered.wait(WAIT_LIMIT), "the wrong attempt is held by its back-off"
    return t, release


def test_a_right_password_never_waits_behind_a_held_wrong_one_from_the_same_address(engine):
    for _ in range(owners.BACKOFF.free):
        owners.attempt_sign_in(engine, "10.0.0.3", "guess", PASSWORD, sleep=lambda _s: None)
    first, release = _held_wrong_attempt(engine, "10.0.0.3")
    slept: list[float] = []
    try:
        assert owners.attempt_sign_in(engine, "10.0.0.3", PASSWORD, PASSWORD, sleep=slept.append)
        assert first.is_alive(), "answered while the wrong attempt still waits"
        assert slept == [], "a right password is never delayed"
    finally:
        release.set()
        first.join(WAIT_LIMIT)


def test_wrong_attempts_from_one_address_are_answered_one_after_another(engine):
    """Parallel guesses cannot share one wait: the second wrong answer waits while the first is held."""
    for _ in range(owners.BACKOFF.free):
        owners.attempt_sign_in(engine, "10.0.0.4", "guess", PASSWORD, sleep=lambda _s: None)
    first, release = _held_wrong_attempt(engine, "10.0.0.4")
    answers: list[bool] = []
    second = threading.Thread(
        target=lambda: answers.append(owners.attempt_sign_in(engine, "10.0.0.4", "g2", PASSWORD, sleep=lambda _s: None))
    )
    second.start()
    second.join(0.5)
    assert second.is_alive() and not answers, "the second wrong answer waits for the first"
    release.set()
    first.join(WAIT_LIMIT)
    second.join(WAIT_LIMIT)
    assert answers == [False]


def test_another_address_signs_in_at_once_whatever_one_address_failures(engine):
    policy = owners.Backoff(free=2, free_all=3)  # one address's failures reach the shared limit too
    for _ in range(6):
        owners.attempt_sign_in(engine, "10.0.0.5", "guess", PASSWORD, policy=policy, sleep=lambda _s: None)
    assert owners.sign_in_delay(engine, "10.0.0.6", policy=policy) > 0, "everyone's wrong answers are slowed"
    first, release = _held_wrong_attempt(engine, "10.0.0.5")
    slept: list[float] = []
    try:
        assert owners.attempt_sign_in(engine, "10.0.0.6", PASSWORD, PASSWORD, policy=policy, sleep=slept.append)
        assert first.is_alive() and slept == [], "the other address's right password did not wait"
    finally:
        release.set()
        first.join(WAIT_LIMIT)


def test_an_address_with_too_many_attempts_in_flight_has_more_turned_away_unchecked(engine, monkeypatch):
    monkeypatch.setattr(owners, "MAX_IN_FLIGHT", 1)
    for _ in range(owners.BACKOFF.free):
        owners.attempt_sign_in(engine, "10.0.0.7", "guess", PASSWORD, sleep=lambda _s: None)
    first, release = _held_wrong_attempt(engine, "10.0.0.7")
    checked: list[tuple[str, str]] = []
    monkeypatch.setattr(owners, "password_matches", lambda *a: checked.append(a) or False)
    try:
        with pytest.raises(owners.TooManyAttempts, match="Too many sign-in attempts at once"):
            owners.attempt_sign_in(engine, "10.0.0.7", "g3", PASSWORD)
        assert checked == [], "nothing was checked"
    finally:
        release.set()
        first.join(WAIT_LIMIT)
    monkeypatch.undo()
    assert owners.attempt_sign_in(engine, "10.0.0.7", PASSWORD, PASSWORD), "the slot is free again"


# -- the stored backend -------------------------------------------------------------------------------------
def test_the_chosen_backend_is_stored_per_owner_without_its_key(engine):
    b = BackendConfig(
        kind="openai",
        base_url="http://user:pw@models.example.org/v1",
        model="m-7b",
        api_key=SecretStr("sk-never-store"),
        temperature=0.3,
        price_input_per_million=0.15,
        price_output_per_million=0.6,
    )
    owners.save_backend(engine, "ada@example.org", b, typed_key=True)
    got = owners.load_backend(engine, "ada@example.org")
    assert got is not None
    assert got.fields["model"] == "m-7b" and got.fields["temperature"] == 0.3
    assert got.fields["base_url"] == "http://models.example.org/v1"
    assert got.fields["price_input_per_million"] == 0.15 and got.fields["price_output_per_million"] == 0.6
    assert got.needs_secret, "the typed key (and the URL's credentials) must be given again"
    assert owners.load_backend(engine, "bob@example.org") is None, "another owner has their own"
    with engine.connect() as conn:
        dump = repr(conn.execute(text("SELECT * FROM owner_backend")).all())
    assert "sk-never-store" not in dump and "pw@" not in dump


def test_a_key_from_the_environment_needs_no_retyping(engine, monkeypatch):
    monkeypatch.setenv("LLM_API_KEY", "sk-env")
    b = BackendConfig(kind="openai", base_url="http://models.example.org/v1", model="m")
    owners.save_backend(engine, "password", b, typed_key=False)
    assert not owners.load_backend(engine, "password").needs_secret
    owners.save_backend(engine, "password", b, typed_key=True)
    assert not owners.load_backend(engine, "password").needs_secret, "the environment's key is there"


def test_the_embedded_model_needs_no_key(engine):
    owners.save_backend(engine, "local", BackendConfig(), typed_key=False)
    got = owners.load_backend(engine, "local")
    assert got.fields["kind"] == "embedded" and not got.needs_secret
