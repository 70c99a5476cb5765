"""How long ago something happened, for ``craig status`` and the age gauges at ``/metrics``."""

from __future__ import annotations

from datetime import datetime


def seconds_since(now: datetime, then: datetime | None) -> float | None:
    """Seconds from ``then`` to ``now`` (both on the database clock); None when there is none."""
    return None if then is None else (now - then).total_seconds()


def format_age(seconds: float | None) -> str:
    """``1h02m03s``, or ``-`` for nothing."""
    if seconds is None:
        return "-"
    whole = max(0, int(seconds))
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m{whole % 60:02d}s"
