"""The real wall clock."""

from __future__ import annotations

from datetime import UTC, datetime

from craig.ports.clock import Clock


class SystemClock(Clock):
    def now(self) -> datetime:
        return datetime.now(UTC)
