"""Who may see what: the owner signs in; a link holder sees only the page their token grants.

Two kinds of visitor. **The owner** (or a team member) signs in with Streamlit's OpenID Connect login where
an `[auth]` section is configured, else with a password from `STUDIO_PASSWORD` (environment) or
`studio_password` (`.streamlit/secrets.toml`). With neither, an app that only its own machine can reach
(bound to loopback, no proxy in front) stays open for its one local user; one that other machines can reach
refuses to show anything until a sign-in is set up. **A link holder** (a report share link, an expert's
survey link, a ConsEval rater's link, an annotator's link) sees only the page of their link: every other
page refuses them, for the rest of the browser session. The page itself checks the token on every run, so
a revoked link stops working on the next rerun.

No Streamlit here: the thin layer in components/access.py reads the session, secrets and headers and asks.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal
from urllib.parse import urlsplit


@dataclass(frozen=True)
class LinkKind:
    """A kind of personal link: the page it opens and the query parameter that carries its token."""

    kind: str
    page: str  # the page's title, as shown to the holder
    path: str  # the page's script, for st.page_link / st.switch_page
    param: str
    noun: str


LINKS: dict[str, LinkKind] = {
    k.kind: k
    for k in (
        LinkKind("share", "Shared report", "pages/12_Reports.py", "share", "read-only report link"),
        LinkKind("expert", "Expert survey", "pages/11_Survey.py", "token", "survey link"),
        LinkKind("rater", "Rate", "pages/9_Rate.py", "token", "rating link"),
        LinkKind("annotator", "Annotate", "pages/7_Annotate.py", "token", "annotation link"),
    )
}
MAX_TOKEN = 200  # real tokens have 32 characters; anything far longer is not a token


class Mode(StrEnum):
    """How the owner gets in."""

    OIDC = "oidc"  # st.login with the [auth] section of secrets.toml
    PASSWORD = "password"  # STUDIO_PASSWORD / studio_password
    OPEN = "open"  # no sign-in set up, reachable from this machine only: open to its one local user
    CLOSED = "closed"  # no sign-in set up and reachable from other machines: nothing is shown


@dataclass(frozen=True)
class Grant:
    """What a link holder's session may open: the page of one kind of link, with that link's token."""

    kind: str
    token: str

    @property
    def link(self) -> LinkKind:
        return LINKS[self.kind]


@dataclass(frozen=True)
class Decision:
    """The gate's answer for one page run."""

    show: Literal["owner", "link", "sign_in", "refused", "closed"]
    grant: Grant | None = None  # the grant the session holds from now on (link holders)
    restore: dict[str, str] | None = None  # query parameters to put back (a link page reached without them)
    message: str = ""
    keep_held: bool = False  # this run shows another kind of link's page; the session keeps the grant it held

    @property
    def allowed(self) -> bool:
        return self.show in ("owner", "link")


# -- where the app can be reached from -------------------------------------------------------------------
LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}
FORWARDED = ("x-forwarded-for", "x-forwarded-host", "x-real-ip", "forwarded")


def is_loopback(host: str | None) -> bool:
    """A host name or address that only this machine reaches (127.0.0.0/8, ::1, localhost)."""
    host = (host or "").strip().strip("[]").lower()
    if not host:
        return False
    if host in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _origin_host(value: str) -> str | None:
    try:
        return urlsplit(value if "//" in value else f"//{value}").hostname
    except ValueError:
        return None


def _in(address: str, networks: list[str]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return False
    for net in networks:
        try:
            if ip in ipaddress.ip_network(net.strip(), strict=False):
                return True
        except ValueError:
            continue
    return False


def client_address(peer: str | None, headers: Mapping[str, str] | None, trusted: list[str]) -> str:
    """The browser's address, for the sign-in back-off: the connection's (`peer`; None is this machine), or,
    when that is a proxy the deployment trusts, the last address in X-Forwarded-For that is not one of them.
    A forwarded address from anyone else is ignored: a client could write any."""
    address = peer or "127.0.0.1"
    if not trusted or not _in(address, trusted):
        return peer or ""
    h = {k.lower(): v for k, v in (headers or {}).items()}
    hops = [a.strip() for a in h.get("x-forwarded-for", "").split(",") if a.strip()]
    for hop in reversed(hops):  # each proxy appends the address it saw: read from the nearest one back
        if not _in(hop, trusted):
            return hop
    return peer or ""


def is_local_only(server_address: str | None, headers: Mapping[str, str] | None = None) -> bool:
    """Only this machine reaches the app: the server listens on loopback and the browser's request came
    straight from this machine (a reverse proxy in front sets forwarding headers or another origin)."""
    if not is_loopback(server_address):
        return False  # unset means every interface
    h = {k.lower(): v for k, v in (headers or {}).items()}
    if any(h.get(name) for name in FORWARDED):
        return False
    for name in ("origin", "host"):
        if h.get(name) and not is_loopback(_origin_host(h[name])):
            return False
    return True


def sign_in_mode(*, oidc: bool, password: bool, local_only: bool) -> Mode:
    """OIDC where configured, else a password, else open on loopback only."""
    if oidc:
        return Mode.OIDC
    if password:
        return Mode.PASSWORD
    return Mode.OPEN if local_only else Mode.CLOSED


CLOSED_MESSAGE = (
    "This app can be reached from other machines and no sign-in is set up, so it shows nothing. Set a password "
    '(`STUDIO_PASSWORD=...` in the environment, or `studio_password = "..."` in `.streamlit/secrets.toml`) or '
    "configure Streamlit's OpenID Connect login (an `[auth]` section in `.streamlit/secrets.toml`), then restart "
    "the app. For a single local user, serve it on 127.0.0.1 only (`make run`)."
)


# -- the owner's credentials ------------------------------------------------------------------------------
def password_matches(given: str, expected: str) -> bool:
    """Compare a typed password with the configured one in constant time."""
    if not expected:
        return False
    return hmac.compare_digest((given or "").encode("utf-8"), expected.encode("utf-8"))


def oidc_providers(auth: Mapping | None) -> list[str | None]:
    """The providers an `[auth]` section configures: None for one given in `[auth]` itself, else the names
    of its `[auth.NAME]` sub-sections. Empty when nothing usable is configured."""
    if not auth:
        return []
    if not (auth.get("redirect_uri") and auth.get("cookie_secret")):
        return []
    named = [str(k) for k, v in auth.items() if isinstance(v, Mapping) and v.get("client_id")]
    return ([None] if auth.get("client_id") else []) + named


def parse_owners(value: str | Iterable[str] | None) -> list[str]:
    """An allow-list of accounts: emails, or "@domain" for a whole domain; comma-separated or a list."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(i).strip().lower() for i in items if str(i).strip()]


def is_owner_account(email: str | None, owners: Iterable[str]) -> bool:
    """Whether a signed-in account may use the app as an owner: any account when the list is empty."""
    owners = list(owners)
    if not owners:
        return True
    email = (email or "").strip().lower()
    if not email or "@" not in email:
        return False
    domain = "@" + email.rsplit("@", 1)[1]
    return email in owners or domain in owners


# -- the gate ----------------------------------------------------------------------------------------------
def link_token(kind: str | None, query: Mapping[str, str]) -> str | None:
    """The token a page of this link kind was opened with, or None."""
    if kind is None:
        return None
    token = (query.get(LINKS[kind].param) or "").strip()
    return token if token and len(token) <= MAX_TOKEN else None


def decide(*, page_link: str | None, query: Mapping[str, str], owner: bool, held: Grant | None, mode: Mode) -> Decision:
    """Who sees this page run.

    page_link: the link kind this page accepts (None for an owner-only page); owner: the session has signed
    in (or is the local user of an open app); held: the grant this session already holds.

    - The owner sees every page, links included (a signed-in owner who opens a link keeps full access).
    - A page opened with its link's token makes the session a link holder for that page; a new token on the
      same page replaces the held one (a replaced annotator link); a token of another kind of link shows that
      page for this run and leaves the held grant as it was.
    - A link holder sees the page of their grant (its token put back when the URL lost it) and nothing else,
      whatever the mode: even an open app does not turn a link holder into its owner.
    - Anyone else signs in (OIDC or password), is the local user of an open app, or is refused.
    """
    if owner:
        return Decision("owner")
    token = link_token(page_link, query)
    if token is not None:
        # Another kind of link opened in a link holder's session (a share URL pasted into a rater's tab) shows
        # its own page, checked by that page, but never takes the place of the grant the session holds.
        keep = held is not None and held.kind != page_link
        return Decision("link", grant=Grant(page_link, token), keep_held=keep)  # type: ignore[arg-type]
    if held is not None:
        link = held.link
        if page_link == held.kind:
            return Decision("link", grant=held, restore={link.param: held.token})
        return Decision(
            "refused",
            grant=held,
            message=(
                f"This page is for the studio's owner. Your {link.noun} opens only the **{link.page}** page; "
                "nothing else of the app is open to it."
            ),
        )
    if mode is Mode.OPEN:
        return Decision("owner")
    if mode is Mode.CLOSED:
        return Decision("closed", message=CLOSED_MESSAGE)
    return Decision("sign_in")
