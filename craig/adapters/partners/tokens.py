"""OAuth2 client-credentials tokens, cached per partner and refreshed before they expire.

A token is refreshed ``lead`` before its expiry (``TOKEN_REFRESH_LEAD_TIME``; half the lifetime
for tokens shorter than twice the lead), measured from when the token was *requested*, so it is
never presented after it expires. One refresh at a time per partner: concurrent callers wait for
the refresh in flight instead of each asking for a token. Credentials are part of the cache key,
so a changed secret never reuses the old token.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from datetime import timedelta

import attrs
import structlog

from craig.domain.exchange import DispatchResult, describe
from craig.domain.partners import Partner

log = structlog.get_logger(__name__)


@attrs.frozen
class TokenGrant:
    access_token: str
    expires_in: timedelta


class TokenUnavailable(Exception):
    """The token endpoint failed; ``result`` classifies like a dispatch (retry or fail)."""

    def __init__(self, result: DispatchResult) -> None:
        super().__init__(describe(result))
        self.result = result


@attrs.define
class _Cached:
    value: str
    refresh_at: float
    expires_at: float


_Key = tuple[object, ...]


class TokenCache:
    def __init__(
        self,
        fetch: Callable[[Partner], Awaitable[TokenGrant]],
        lead: timedelta,
        monotonic: Callable[[], float],
        on_refresh: Callable[[], None] | None = None,
    ) -> None:
        self._fetch = fetch
        self._lead = lead.total_seconds()
        self._monotonic = monotonic
        self._on_refresh = on_refresh
        self._tokens: dict[_Key, _Cached] = {}
        self._locks: dict[_Key, asyncio.Lock] = {}

    @staticmethod
    def _key(partner: Partner) -> _Key:
        secret = hashlib.sha256(partner.client_secret.encode()).hexdigest()
        return (partner.id, partner.token_url, partner.client_id, secret)

    def _fresh(self, key: _Key) -> str | None:
        cached = self._tokens.get(key)
        if cached is not None and self._monotonic() < cached.refresh_at:
            return cached.value
        return None

    async def token(self, partner: Partner) -> str:
        """A token that stays valid at least ``lead`` (or half its lifetime) from now."""
        key = self._key(partner)
        fresh = self._fresh(key)
        if fresh is not None:
            return fresh
        async with self._locks.setdefault(key, asyncio.Lock()):
            return self._fresh(key) or await self._refresh(key, partner)

    def valid_for(self, partner: Partner) -> float:
        """Seconds the cached token of ``partner`` has left before it expires (0 when none)."""
        cached = self._tokens.get(self._key(partner))
        return max(0.0, cached.expires_at - self._monotonic()) if cached is not None else 0.0

    async def replace(self, partner: Partner, rejected: str) -> str:
        """The partner answered 401 to ``rejected``: a new token, unless another caller already
        replaced it."""
        key = self._key(partner)
        async with self._locks.setdefault(key, asyncio.Lock()):
            cached = self._tokens.get(key)
            if cached is not None and cached.value != rejected and self._monotonic() < cached.refresh_at:
                return cached.value
            self._tokens.pop(key, None)
            return await self._refresh(key, partner)

    async def _refresh(self, key: _Key, partner: Partner) -> str:
        requested_at = self._monotonic()
        try:
            grant = await self._fetch(partner)
        except TokenUnavailable:
            cached = self._tokens.get(key)
            if cached is not None and self._monotonic() < cached.expires_at:
                log.warning("token refresh failed; the current token is still valid", partner=partner.name)
                return cached.value
            raise
        lifetime = grant.expires_in.total_seconds()
        lead = min(self._lead, lifetime / 2)
        expires_at = requested_at + lifetime
        self._tokens[key] = _Cached(grant.access_token, expires_at - lead, expires_at)
        if self._on_refresh is not None:
            self._on_refresh()
        return grant.access_token
