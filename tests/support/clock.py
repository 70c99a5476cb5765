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


class FakeMonotonic:
    """A controllable ``time.monotonic``: seconds that move only when told, never back."""

    def __init__(self, start: float = 1000.0) -> None:
        self.current = start

    def __call__(self) -> float:
        return self.current

    def advance(self, delta: timedelta | float) -> None:
        seconds = delta.total_seconds() if isinstance(delta, timedelta) else delta
        if seconds < 0:
            raise ValueError("a monotonic clock never goes back")
        self.current += seconds
