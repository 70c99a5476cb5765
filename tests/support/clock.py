"""A controllable clock for the memory adapters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class FakeClock:
    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.current

    def advance(self, delta: timedelta | float) -> None:
        self.current += delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
