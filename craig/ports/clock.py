"""Clock port: where "now" comes from."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    """Wall-clock time, always timezone-aware UTC.

    Claims and leases use the *database* clock (``now()`` in SQL) so that app servers with
    skewed clocks cannot steal each other's work; this port is for the memory adapters and
    for values that are merely informative (``occurred_at``).
    """

    def now(self) -> datetime: ...
