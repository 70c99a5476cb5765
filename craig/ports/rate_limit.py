"""Port: request rate limits shared by every instance."""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol

from craig.domain.rate_limit import RateDecision


class RateLimiter(Protocol):
    """Counts requests per bucket (for intake: per client IP) across every instance.

    ``hit`` is atomic: concurrent hits on one bucket, from any instance, are serialized, and a
    denied hit consumes nothing. The limiter runs its own short transaction (never the caller's
    unit of work) and uses the database clock, so instances with skewed clocks agree.
    """

    async def hit(self, bucket: str, limit: int, window: timedelta) -> RateDecision:
        """Admit or refuse one request of ``bucket``: at most ``limit`` per ``window``
        (:func:`craig.domain.rate_limit.gcra`). Raises ``Unavailable`` when storage is down."""
        ...

    async def purge_idle(self, older_than: timedelta, batch_size: int) -> int:
        """Delete up to ``batch_size`` buckets idle for longer than ``older_than`` (their TAT lies
        that far in the past, so they limit no one); returns how many. Shaped like the cleanup
        worker's ``Retention.purge``."""
        ...
