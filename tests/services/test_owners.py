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


class Clock:
    """A clock the test moves: the gate's refills happen only when it does."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _roomy_gate(monkeypatch):
    """The back-off tests check many passwords in a row: the overall ceiling is tested on its own below."""
    monkeypatch.setattr(owners, "GATE", owners.CheckGate(burst=10_000))


def _wait_until(condition, what: str) -> None:
    done = threading.Event()
    for _ in range(int(WAIT_LIMIT / 0.01)):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError(what)


def _held_wrong_attempt(engine, address: str, session: str):
    """Start a wrong attempt from `address` whose back-off wait is held until the returned event is set."""
    entered, release = threading.Event(), threading.Event()

    def held_sleep(_seconds: float) -> None:
        entered.set()
        release.wait(WAIT_LIMIT)

    t = threading.Thread(
        target=owners.attempt_sign_in,
        args=(engine, address, "g1", PASSWORD),
        kwargs={"sleep": held_sleep, "session": session},
    )
    t.start()
    assert entered.wait(WAIT_LIMIT), "the wrong attempt is held by its back-off"
    return t, release


def test_a_right_password_never_waits_behind_a_held_wrong_one_from_the_same_address(engine):
    for _ in range(owners.BACKOFF.free):
        owners.attempt_sign_in(engine, "10.0.0.3", "guess", PASSWORD, session="other", sleep=lambda _s: None)
    first, release = _held_wrong_attempt(engine, "10.0.0.3", "other")
    slept: list[float] = []
    try:
        assert owners.attempt_sign_in(engine, "10.0.0.3", PASSWORD, PASSWORD, session="owner", sleep=slept.append)
        assert first.is_alive(), "answered while the wrong attempt still waits"
        assert slept == [], "a right password is never held back"
    finally:
        release.set()
        first.join(WAIT_LIMIT)


def test_wrong_attempts_of_one_session_are_answered_one_after_another(engine):
    """Parallel guesses from one browser session cannot share one wait: the second waits while the first is held."""
    for _ in range(owners.BACKOFF.free):
        owners.attempt_sign_in(engine, "10.0.0.4", "guess", PASSWORD, session="s", sleep=lambda _s: None)
    first, release = _held_wrong_attempt(engine, "10.0.0.4", "s")
    answers: list[bool] = []
    second = threading.Thread(
        target=lambda: answers.append(
            owners.attempt_sign_in(engine, "10.0.0.4", "g2", PASSWORD, session="s", sleep=lambda _s: None)
        )
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
    first, release = _held_wrong_attempt(engine, "10.0.0.5", "attacker")
    slept: list[float] = []
    try:
        assert owners.attempt_sign_in(engine, "10.0.0.6", PASSWORD, PASSWORD, policy=policy, sleep=slept.append)
        assert first.is_alive() and slept == [], "the other address's right password did not wait"
    finally:
        release.set()
        first.join(WAIT_LIMIT)


def _drain(clock: Clock, threads: list[threading.Thread]) -> None:
    """Let every waiting attempt through: the clock moves on until each has been checked."""
    pause = threading.Event()
    for _ in range(int(WAIT_LIMIT / 0.01)):
        if not any(t.is_alive() for t in threads):
            return
        clock.now += 10.0
        pause.wait(0.01)


def _flood(engine, gate, sessions: list[str], release: threading.Event, checked: list[str]) -> list[threading.Thread]:
    """A wrong attempt from each session, all from one address, their answers held until `release`."""

    def attempt(session: str) -> None:
        owners.attempt_sign_in(
            engine, "203.0.113.9", f"guess-{session}", PASSWORD, session=session, gate=gate,
            sleep=lambda _s: release.wait(WAIT_LIMIT),
        )  # fmt: skip

    threads = [threading.Thread(target=attempt, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    return threads


def test_the_owner_signs_in_behind_a_flood_of_wrong_ones_from_the_same_address(file_engine, monkeypatch):
    """One address (loopback, or a proxy every user comes through) floods wrong passwords from six sessions that
    have failed before; the owner's right one, from the same address, is checked at the next free check, ahead of
    every waiting wrong one, and never turned away."""
    attackers = [f"attacker-{i}" for i in range(6)]
    for session in attackers:  # each has failed once already
        owners.attempt_sign_in(file_engine, "203.0.113.9", "guess", PASSWORD, session=session, sleep=lambda _s: None)
    clock = Clock()
    gate = owners.CheckGate(burst=2, per_second=1.0, clock=clock)
    checked: list[str] = []
    matches = owners.password_matches
    monkeypatch.setattr(owners, "password_matches", lambda typed, pw: checked.append(typed) or matches(typed, pw))
    release = threading.Event()
    threads = _flood(file_engine, gate, attackers, release, checked)
    try:
        _wait_until(lambda: len(checked) == 2 and gate.waiting == 4, "two checked at once, four waiting")
        answer: list[bool] = []
        owner = threading.Thread(
            target=lambda: answer.append(
                owners.attempt_sign_in(file_engine, "203.0.113.9", PASSWORD, PASSWORD, session="owner", gate=gate)
            )
        )
        owner.start()
        _wait_until(lambda: gate.waiting == 5, "the owner waits for the next check")
        clock.now += 1.0  # one check is free again
        owner.join(WAIT_LIMIT)
        assert answer == [True], "the owner signs in"
        assert checked[2] == PASSWORD and len(checked) == 3, "ahead of the four waiting wrong ones"
        assert not release.is_set() and gate.waiting == 4, "while the flood still waits and is held"
    finally:
        release.set()
        _drain(clock, threads)


def test_the_gate_bounds_the_checks_and_delays_the_rest_rather_than_refusing_them(file_engine, monkeypatch):
    """The attacker's guess rate: `burst` checks at once, then `per_second`, whatever the number of sessions;
    an attempt over the ceiling waits (it is checked later), none is turned away."""
    clock = Clock()
    gate = owners.CheckGate(burst=3, per_second=1.0, clock=clock)
    checked: list[str] = []
    monkeypatch.setattr(owners, "password_matches", lambda typed, pw: checked.append(typed) or False)
    release = threading.Event()
    release.set()  # answers are not held: only the gate slows these attempts
    threads = _flood(file_engine, gate, [f"s{i}" for i in range(8)], release, checked)
    try:
        _wait_until(lambda: len(checked) == 3 and gate.waiting == 5, "three checked, five waiting")
        clock.now += 2.0
        _wait_until(lambda: len(checked) == 5 and gate.waiting == 3, "two more after two seconds")
        assert len(checked) == 5
    finally:
        _drain(clock, threads)
    assert len(checked) == 8 and not any(t.is_alive() for t in threads), "every attempt was checked in the end"


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
