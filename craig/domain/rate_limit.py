"""Rate limiting by GCRA (the generic cell rate algorithm), as a pure decision.

A bucket keeps one timestamp, its *theoretical arrival time* (TAT). ``limit`` requests per
``window`` means one request per ``window / limit`` on average, with bursts of up to ``limit``
at once. Unlike a fixed window it never admits twice the limit across a window boundary, and it
needs one row per client rather than one per client and window. A denied request consumes
nothing.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import attrs


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
