"""Rate limiting by GCRA (the generic cell rate algorithm), as a pure decision.

A bucket keeps one timestamp, its *theoretical arrival time* (TAT). ``limit`` requests per
``window`` means one request per ``window / limit`` on average, with bursts of up to ``limit``
at once. Unlike a fixed window it never admits twice the limit across a window boundary, and it
needs one row per client rather than one per client and window. A denied request consumes
nothing.
"""

from __future__ import annotations

import ipaddress
import math
from datetime import datetime, timedelta

import attrs

from craig.domain.constants import CLIENT_RATE_LIMIT_IPV6_PREFIX_BITS


@attrs.frozen
class RateDecision:
    allowed: bool
    #: How long until one more request would be admitted (zero when this one is).
    retry_after: timedelta = timedelta(0)

    @property
    def retry_after_seconds(self) -> int:
        """Whole seconds for a ``Retry-After`` header: rounded up, at least 1."""
        return max(1, math.ceil(self.retry_after.total_seconds()))


def emission_interval(limit: int, window: timedelta) -> timedelta:
    if limit < 1:
        raise ValueError("a rate limit allows at least one request per window")
    return window / limit


def gcra(tat: datetime | None, now: datetime, limit: int, window: timedelta) -> tuple[RateDecision, datetime | None]:
    """Decide one request. Returns the decision and the bucket's new TAT (None: unchanged)."""
    interval = emission_interval(limit, window)
    candidate = max(tat or now, now) + interval
    if candidate - now > window:
        return RateDecision(False, candidate - now - window), None
    return RateDecision(True), candidate


def client_bucket(scope: str, address: str | None) -> str:
    """The bucket of a client address: an IPv4 address itself (also when IPv4-mapped), an IPv6
    address's /64, and one shared ``unknown`` bucket for a missing or unreadable address.

    One subscriber usually holds a whole IPv6 /64, so a limit per IPv6 address would let one
    client pick a fresh address for every request."""
    try:
        parsed = ipaddress.ip_address((address or "").strip())
    except ValueError:
        return f"{scope}:unknown"
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        parsed = parsed.ipv4_mapped
    if isinstance(parsed, ipaddress.IPv4Address):
        return f"{scope}:{parsed}"
    network = ipaddress.IPv6Network((parsed, CLIENT_RATE_LIMIT_IPV6_PREFIX_BITS), strict=False)
    return f"{scope}:{network}"
