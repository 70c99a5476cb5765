"""Per-partner rate limiting: a generic cell rate algorithm (GCRA) that hands out slots.

State is one "theoretical arrival time" (``tat``) per key. Slots are spaced exactly
``interval = 60 s / rate`` on one clock (the database's), so the schedule never drifts however
late callers wake up, and several processes sharing the state can never exceed the rate. A
caller reserves consecutive slots that start within ``max_wait`` and sleeps until its own.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import attrs


@attrs.frozen
class Reservation:
    """``granted``: a slot is yours, send after ``wait``. Otherwise none was taken and the next
    free slot starts in ``wait``."""

    granted: bool
    wait: timedelta


def interval_for(rate_per_minute: int) -> timedelta:
    if rate_per_minute < 1:
        raise ValueError("rate_per_minute must be >= 1")
    return timedelta(minutes=1) / rate_per_minute


def granted_count(first_wait: timedelta, interval: timedelta, count: int, max_wait: timedelta) -> int:
    """How many of ``count`` consecutive slots, the first ``first_wait`` away, start within ``max_wait``."""
    if count < 1 or first_wait > max_wait:
        return 0
    return min(count, math.floor((max_wait - first_wait) / interval) + 1)


def reserve(
    tat: datetime | None, now: datetime, interval: timedelta, count: int, max_wait: timedelta
) -> tuple[datetime, list[Reservation]]:
    """The new ``tat`` and one reservation per requested slot (granted ones first)."""
    base = now if tat is None else max(tat, now)
    first_wait = base - now
    granted = granted_count(first_wait, interval, count, max_wait)
    return base + interval * granted, reservations(granted, count, first_wait, interval)


def reservations(granted: int, count: int, first_wait: timedelta, interval: timedelta) -> list[Reservation]:
    taken = [Reservation(True, first_wait + interval * i) for i in range(granted)]
    next_free = first_wait + interval * granted
    return taken + [Reservation(False, next_free)] * (count - granted)
