"""Partner agencies Craig exchanges data with, and the rules for registering one."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlsplit
from uuid import UUID

import attrs

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


def _http_url(field: str, value: str) -> str:
    value = value.strip()
    parts = urlsplit(value)
    if len(value) > PARTNER_URL_MAX_LENGTH or parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidPartner(f"{field} must be an absolute http(s) URL of at most {PARTNER_URL_MAX_LENGTH} characters")
    if parts.query or parts.fragment:
        raise InvalidPartner(f"{field} must not carry a query or fragment")
    return value


def _path(field: str, value: str | None, default: str) -> str:
    if value is None:
        return default
    if not value.startswith("/") or len(value) > PARTNER_URL_MAX_LENGTH or any(c in value for c in "?# "):
        raise InvalidPartner(f"{field} must be a path starting with '/' (no query, fragment or spaces)")
    return value


def _text(field: str, value: str, limit: int) -> str:
    value = value.strip()
    if not value or len(value) > limit:
        raise InvalidPartner(f"{field} must be 1 to {limit} characters")
    return value


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
        base_url=_http_url("base_url", base_url),
        token_url=_http_url("token_url", token_url),
        client_id=_text("client_id", client_id, PARTNER_CLIENT_ID_MAX_LENGTH),
        client_secret=client_secret,
        rate_limit_rpm=rate_limit_rpm,
        send_path=_path("send_path", send_path, DEFAULT_SEND_PATH),
        records_path=_path("records_path", records_path, DEFAULT_RECORDS_PATH),
        created_at=now,
    )
