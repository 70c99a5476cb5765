"""Partner agencies Craig exchanges data with, and the rules for registering one."""

from __future__ import annotations

import functools
import ipaddress
import re
from datetime import datetime
from urllib.parse import urlsplit
from uuid import UUID

import attrs
import idna

from craig.domain.constants import (
    DEFAULT_PARTNER_RATE_LIMIT_RPM,
    PARTNER_CLIENT_ID_MAX_LENGTH,
    PARTNER_CLIENT_SECRET_MAX_LENGTH,
    PARTNER_NAME_MAX_LENGTH,
    PARTNER_RATE_LIMIT_MAX_RPM,
    PARTNER_URL_MAX_LENGTH,
)
from craig.domain.errors import Conflict, InvalidInput

DEFAULT_SEND_PATH = "/transactions"
DEFAULT_RECORDS_PATH = "/records"


class InvalidPartner(InvalidInput):
    code = "invalid-partner"


class PartnerNameTaken(Conflict):
    code = "partner-name-taken"

    def __init__(self, name: str) -> None:
        super().__init__(f"a partner named {name!r} already exists")


@attrs.frozen(kw_only=True)
class Partner:
    id: UUID
    name: str
    base_url: str
    token_url: str
    client_id: str
    client_secret: str = attrs.field(repr=False)
    rate_limit_rpm: int | None = None
    send_path: str = DEFAULT_SEND_PATH
    records_path: str = DEFAULT_RECORDS_PATH
    created_at: datetime

    @property
    def effective_rate_limit_rpm(self) -> int:
        """Its own limit, or ``DEFAULT_PARTNER_RATE_LIMIT_RPM`` when none is set."""
        return self.rate_limit_rpm or DEFAULT_PARTNER_RATE_LIMIT_RPM

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + path


#: A host an HTTP client reads as an IPv4 address (and refuses unless it is a valid one).
_IPV4_LIKE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")
#: An ASCII host name: letters, digits, hyphens and (internal names) underscores, in dotted labels.
_ASCII_HOST = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?")
#: The authority after any userinfo: a bracketed IP literal or a name, then an optional port.
_HOST_PORT = re.compile(r"(\[[^\[\]]*\]|[^\[\]:]*)(:[0-9]*)?")


def _usable_host(host: str) -> bool:
    """Whether an HTTP client can connect to ``host`` (lowercased, IPv6 brackets off, as
    ``urlsplit`` gives it): a valid IP address; an ASCII name of letters, digits, hyphens and
    underscores (internal names have them), whose ``xn--`` labels decode (all of it when it
    starts with one, as httpx reads it); or an internationalised name that IDNA 2008 encodes
    (what httpx does with one)."""
    try:
        if ":" in host:
            ipaddress.IPv6Address(host)
        elif _IPV4_LIKE.fullmatch(host):
            ipaddress.IPv4Address(host)
        elif host.isascii():
            if not _ASCII_HOST.fullmatch(host):
                return False
            # httpx reads a host starting with an A-label as IDNA, every label of it.
            for label in [host] if host.startswith("xn--") else host.split("."):
                if label.startswith("xn--"):
                    idna.decode(label)
        else:
            idna.encode(host)
    except (ValueError, idna.IDNAError):
        return False
    return True


def _url_problem(field: str, value: str) -> str | None:
    """Why ``value`` is not a usable partner URL, or None. ``urlsplit`` alone lets through what
    an HTTP client refuses (an unclosed IPv6 bracket, a bad port, a host IDNA cannot encode), so
    a partner registered with one would fail every request."""
    shape = f"{field} must be an absolute http(s) URL of at most {PARTNER_URL_MAX_LENGTH} characters"
    if len(value) > PARTNER_URL_MAX_LENGTH or any(char.isascii() and not char.isprintable() for char in value):
        return shape
    try:
        parts = urlsplit(value)
        host = parts.hostname
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number in range
    except ValueError:
        return shape
    if parts.scheme not in ("http", "https") or not host:
        return shape
    if parts.query or parts.fragment:
        return f"{field} must not carry a query or fragment"
    if not _HOST_PORT.fullmatch(parts.netloc.rpartition("@")[2]) or not _usable_host(host):
        return f"{field} must name a valid host: a DNS name (IDNA 2008), an IPv4 or a bracketed IPv6 address"
    return None


def _http_url(field: str, value: str) -> str:
    value = value.strip()
    problem = _url_problem(field, value)
    if problem is not None:
        raise InvalidPartner(problem)
    return value


def _path(field: str, value: str | None, default: str) -> str:
    if value is None:
        return default
    if (
        not value.startswith("/")
        or len(value) > PARTNER_URL_MAX_LENGTH
        or any(c in "?# " or (c.isascii() and not c.isprintable()) for c in value)
    ):
        raise InvalidPartner(
            f"{field} must be a path starting with '/' (no query, fragment, spaces or control characters)"
        )
    return value


def unusable_reason(partner: Partner, path: str) -> str | None:
    """Why no request to ``partner`` at ``path`` can be made (its URLs, or ``path``, are ones
    :func:`new_partner` refuses: stored before it did), or None. Cached: cheap on every send."""
    return _unusable_reason(partner.base_url, partner.token_url, path)


@functools.lru_cache(maxsize=1024)
def _unusable_reason(base_url: str, token_url: str, path: str) -> str | None:
    try:
        _http_url("base_url", base_url)
        _http_url("token_url", token_url)
        _path("path", path, DEFAULT_SEND_PATH)
    except InvalidPartner as error:
        return f"the partner's URLs are unusable: {error.detail}"
    return None


def _text(field: str, value: str, limit: int) -> str:
    value = value.strip()
    if not value or len(value) > limit:
        raise InvalidPartner(f"{field} must be 1 to {limit} characters")
    if _CONTROL.search(value):  # a name goes into log lines and operators' terminals
        raise InvalidPartner(f"{field} must not hold control characters")
    return value


#: What can forge or reorder a log line: C0 and C1 controls, the line and paragraph
#: separators, and the bidirectional overrides and isolates. Spaces, joiners and soft hyphens
#: that names need (Mehr\u200cnegar) are fine.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _without_credentials(field: str, url: str) -> str:
    """A URL with a user or password in it would show them to everyone who may list partners
    (the client secret is the one credential Craig keeps hidden and encrypted)."""
    if "@" in urlsplit(url).netloc:
        raise InvalidPartner(
            f"{field} must not carry a user name or password; give them as client_id and client_secret"
        )
    return url


def _partner_url(field: str, value: str) -> str:
    """A URL a partner may be registered with (stricter than what a stored one must be)."""
    return _encrypted_in_transit(field, _without_credentials(field, _http_url(field, value)))


def _encrypted_in_transit(field: str, url: str) -> str:
    """``https``, or plain ``http`` to this machine only (``localhost``, 127.0.0.0/8, ``::1``):
    the token request carries the client secret and a send carries a child's record. A partner
    reached in clear on a private network goes through a TLS proxy on this machine instead. A
    partner stored before this rule keeps working (:func:`unusable_reason` does not apply it)."""
    parts = urlsplit(url)
    if parts.scheme == "https" or _is_loopback(parts.hostname or ""):
        return url
    raise InvalidPartner(
        f"{field} must use https: plain http is allowed only to this machine "
        "(localhost, 127.0.0.0/8 or [::1]), for example a TLS proxy in front of the partner"
    )


def _is_loopback(host: str) -> bool:
    """``localhost`` (with or without its root dot), 127.0.0.0/8, ``::1``, and 127.0.0.0/8
    written as an IPv4-mapped IPv6 address (``::ffff:127.0.0.1``)."""
    if host.removesuffix(".") == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.partition("%")[0])  # an IPv6 zone names no other host
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def shown_url(url: str) -> str:
    """``url`` as it may be shown to anyone who may list partners: any user name or password in
    it (a partner registered before they were refused) replaced by ``***``. Read as text, not
    with ``urlsplit``: a URL stored before the rules may be one it refuses (``https://[::1``)."""
    if "@" not in url:
        return url
    found = _AUTHORITY.match(url)
    if found is None:
        return "***"  # not a URL at all: nothing of it is shown
    scheme, authority, rest = found.groups()
    if "@" not in authority:
        return url
    return f"{scheme}***@{authority.rpartition('@')[2]}{rest}"


#: A URL's scheme with ``//``, its authority (up to the first ``/``, ``?`` or ``#``), the rest.
_AUTHORITY = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)(.*)", re.DOTALL)


def new_partner(
    *,
    id: UUID,
    name: str,
    base_url: str,
    token_url: str,
    client_id: str,
    client_secret: str,
    rate_limit_rpm: int | None,
    send_path: str | None = None,
    records_path: str | None = None,
    now: datetime,
) -> Partner:
    if rate_limit_rpm is not None and not 1 <= rate_limit_rpm <= PARTNER_RATE_LIMIT_MAX_RPM:
        raise InvalidPartner(f"rate_limit_rpm must lie between 1 and {PARTNER_RATE_LIMIT_MAX_RPM}")
    if not client_secret or len(client_secret) > PARTNER_CLIENT_SECRET_MAX_LENGTH:
        raise InvalidPartner(f"client_secret must be 1 to {PARTNER_CLIENT_SECRET_MAX_LENGTH} characters")
    return Partner(
        id=id,
        name=_text("name", name, PARTNER_NAME_MAX_LENGTH),
        base_url=_partner_url("base_url", base_url),
        token_url=_partner_url("token_url", token_url),
        client_id=_text("client_id", client_id, PARTNER_CLIENT_ID_MAX_LENGTH),
        client_secret=client_secret,
        rate_limit_rpm=rate_limit_rpm,
        send_path=_path("send_path", send_path, DEFAULT_SEND_PATH),
        records_path=_path("records_path", records_path, DEFAULT_RECORDS_PATH),
        created_at=now,
    )
