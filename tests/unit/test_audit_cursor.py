"""The audit trail's page cursor: what it refuses before any query runs."""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime

import pytest

from craig.domain.audit_query import AuditCursor
from craig.domain.errors import InvalidCursor


def _forged(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def test_a_cursor_round_trips() -> None:
    cursor = AuditCursor(datetime(2026, 12, 6, 10, 0, tzinfo=UTC), uuid.uuid4())
    assert AuditCursor.decode(cursor.encode()) == cursor


@pytest.mark.parametrize(
    "at",
    [
        "0001-01-01T00:00:00+14:00",  # before year 1 in UTC: PostgreSQL's range, not Python's
        "9999-12-31T23:59:59-14:00",  # after year 9999 in UTC: Python cannot hold it
        "1899-12-31T23:59:59+00:00",
        "2026-01-01T00:00:00",  # no zone
    ],
)
def test_a_forged_time_is_an_invalid_cursor_not_a_failing_query(at: str) -> None:
    with pytest.raises(InvalidCursor):
        AuditCursor.decode(_forged(f"a1|{at}|{uuid.uuid4()}"))
