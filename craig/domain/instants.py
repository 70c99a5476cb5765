"""Instants a client gives (a case opened, a contact that happened): checked on the way in, and
read back with their zone."""

from __future__ import annotations

from datetime import MAXYEAR, UTC, datetime, timedelta

from craig.domain.constants import CASEWORK_EARLIEST_TIMESTAMP
from craig.domain.errors import InvalidInput


def stored_instant(value: datetime) -> datetime:
    """A timestamp as read back from storage, with its zone. PostgreSQL's ``infinity`` and
    ``-infinity`` (what Python's ``datetime.max`` and ``datetime.min`` were stored as before their
    dates were bounded) come back from asyncpg as those values without a zone: they are read as
    UTC, so they are answered, compared and put in cursors like every other instant."""
    if value.tzinfo is None and value in (datetime.max, datetime.min):
        return value.replace(tzinfo=UTC)
    return value


def compared_instant(value: datetime | None) -> datetime | None:
    """A time a filter compares stored times with (``opened_from``, ``since``), in UTC. One
    whose UTC form lies beyond the dates Python holds (``9999-12-31T23:59:59-14:00`` is in the
    year 10000, ``0001-01-01T00:00:00+14:00`` in the year 0) is the latest or the earliest
    instant there is, which PostgreSQL compares as ``infinity`` / ``-infinity``: it selects what
    it selected before, where it made the database refuse the query. A time with no zone is
    left for the caller to refuse."""
    if value is None or value.utcoffset() is None:
        return value
    try:
        return value.astimezone(UTC)
    except OverflowError:
        return (datetime.max if value.year == MAXYEAR else datetime.min).replace(tzinfo=UTC)


def checked_instant(
    value: datetime, *, field: str, now: datetime, future_tolerance: timedelta, future: str
) -> datetime:
    """``value`` when it has a zone and lies between :data:`CASEWORK_EARLIEST_TIMESTAMP` and
    ``now + future_tolerance``; otherwise :class:`InvalidInput` (422) naming ``field``, with
    ``future`` as the detail when it lies too far ahead."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(f"{field} needs a time zone (e.g. 2026-01-31T14:00:00Z)", field=field)
    if value < CASEWORK_EARLIEST_TIMESTAMP:
        earliest = CASEWORK_EARLIEST_TIMESTAMP.date().isoformat()
        raise InvalidInput(f"{field} must not lie before {earliest}", field=field)
    if value > now + future_tolerance:
        raise InvalidInput(future, field=field)
    return value
