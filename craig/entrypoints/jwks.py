"""The identity provider's signing keys (a JWKS), cached and refreshed off the request path.

* A token whose ``kid`` is known is checked against the cached key at once; it never waits for
  the network, not even while a fetch is slow or failing.
* An unknown ``kid`` asks for a refresh. There is at most one fetch per ``refresh_interval``,
  however many unknown ``kid``s arrive, and concurrent callers share the fetch in flight, so
  forged tokens with random ``kid``s neither stall requests nor hammer the identity provider. A
  ``kid`` still unknown afterwards is refused at once (no fetch per request).
* Once the keys are older than the interval, the next token starts a refresh in the background,
  so a key the identity provider withdraws stops being accepted within about one interval.
* A fetch is bounded in time (the whole exchange, ``fetch_timeout``) and size (``max_bytes``). A
  fetch that fails, times out or yields no usable key keeps the keys known so far.

Only RS256 and ES256 signing keys (``use`` absent or ``sig``) with a ``kid`` are kept.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, Final

import httpx
import jwt
import structlog

from craig.domain.constants import JWKS_MAX_BYTES

log = structlog.get_logger(__name__)

ASYMMETRIC_ALGORITHMS: Final = ("RS256", "ES256")


class JwksError(Exception):
    """The key set could not be fetched or holds no usable key."""


def parse_key_set(body: bytes) -> dict[str, jwt.PyJWK]:
    """The usable signing keys of a JWKS document, by ``kid``; :class:`JwksError` when none."""
    try:
        document: Any = json.loads(body)
    except ValueError as error:
        raise JwksError(f"the key set is not JSON: {error}") from None
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise JwksError("the key set has no `keys` list")
    keys: dict[str, jwt.PyJWK] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        kid, use = entry.get("kid"), entry.get("use")
        if not isinstance(kid, str) or not kid or use not in (None, "sig"):
            continue
        try:
            key = jwt.PyJWK(entry)
        except jwt.PyJWTError:
            continue  # a key type or curve we do not accept
        if key.algorithm_name in ASYMMETRIC_ALGORITHMS:
            keys[kid] = key
    if not keys:
        raise JwksError("the key set holds no RS256/ES256 signing key with a `kid`")
    return keys


class JwksKeySet:
    """The cache described in the module docstring. One per process, shared by every route;
    its fetches run on the event loop that first needs them."""

    def __init__(
        self,
        url: str,
        *,
        refresh_interval: timedelta,
        fetch_timeout: timedelta,
        max_bytes: int = JWKS_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self._interval = refresh_interval.total_seconds()
        self._timeout = fetch_timeout.total_seconds()
        self._max_bytes = max_bytes
        self._clock = clock
        self._keys: Mapping[str, jwt.PyJWK] = {}
        self._attempted_at: float | None = None
        self._inflight: asyncio.Task[None] | None = None

    @property
    def kids(self) -> frozenset[str]:
        return frozenset(self._keys)

    def key(self, kid: str) -> jwt.PyJWK | None:
        """The cached key; never fetches."""
        return self._keys.get(kid)

    async def key_for(self, kid: str) -> jwt.PyJWK | None:
        """The key for ``kid``. A known one answers at once (starting a background refresh when
        the keys are due); an unknown one waits for the refresh this interval allows, if any."""
        key = self._keys.get(kid)
        if key is None:
            await self.refresh()
            return self._keys.get(kid)
        self._start_if_due()
        return key

    def start(self) -> None:
        """Begin the first fetch in the background (at startup); tokens arriving meanwhile
        wait for it, as for any fetch of an unknown ``kid``. Needs a running event loop."""
        self._start_if_due()

    async def refresh(self) -> None:
        """Fetch now unless a fetch ran within the interval; join the fetch in flight, if any.
        Never raises for a failed fetch (the known keys stay)."""
        task = self._start_if_due()
        if task is not None:
            # A caller that gives up (a client disconnect) must not cancel everyone's fetch.
            await asyncio.shield(task)

    async def aclose(self) -> None:
        """Cancel a fetch in flight (at shutdown)."""
        task, self._inflight = self._inflight, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _start_if_due(self) -> asyncio.Task[None] | None:
        if self._inflight is None:
            now = self._clock()
            if self._attempted_at is not None and now - self._attempted_at < self._interval:
                return None
            self._attempted_at = now
            self._inflight = asyncio.get_running_loop().create_task(self._fetch())
        return self._inflight

    async def _fetch(self) -> None:
        try:
            keys = await self._download()
        except Exception as error:  # whatever failed, the known keys stay in use
            log.warning(
                "jwks refresh failed; keeping the known keys",
                url=self.url,
                error=f"{type(error).__name__}: {error}",
                known_kids=sorted(self._keys),
            )
        else:
            if set(keys) != set(self._keys):
                log.info("jwks refreshed", url=self.url, kids=sorted(keys))
            self._keys = keys
        finally:
            self._inflight = None

    async def _download(self) -> dict[str, jwt.PyJWK]:
        body = bytearray()
        async with (
            asyncio.timeout(self._timeout),
            httpx.AsyncClient(timeout=self._timeout, follow_redirects=False) as client,
            client.stream("GET", self.url, headers={"Accept": "application/json", "Accept-Encoding": "identity"}) as r,
        ):
            if r.status_code != 200:
                raise JwksError(f"the identity provider answered {r.status_code}")
            if r.headers.get("content-encoding", "identity").lower() != "identity":
                raise JwksError("the key set came compressed although identity was asked for")
            async for chunk in r.aiter_raw():
                body += chunk
                if len(body) > self._max_bytes:
                    raise JwksError(f"the key set is larger than {self._max_bytes} bytes")
        return parse_key_set(bytes(body))
