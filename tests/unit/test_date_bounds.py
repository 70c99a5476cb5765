"""The dates a client gives a case or a contact are bounded, so Python's ``datetime.max`` and
``datetime.min`` (PostgreSQL's ``infinity`` and ``-infinity``, read back without a zone) never
reach the database; values already stored that way are read as UTC, and cursors holding them
still page."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from craig.domain.cases import Case, new_case
from craig.domain.constants import CASE_OPENED_FUTURE_TOLERANCE, CASEWORK_EARLIEST_TIMESTAMP, CONTACT_FUTURE_TOLERANCE
from craig.domain.contacts import Contact, ContactType, new_contact
from craig.domain.errors import InvalidInput
from craig.entrypoints.http.cursors import Cursors
from craig.entrypoints.http.problems import ProblemException
from tests.support.ciphers import TEST_CIPHER

pytestmark = pytest.mark.unit

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ID = uuid.UUID(int=7)
MAX_UTC = datetime.max.replace(tzinfo=UTC)
MIN_UTC = datetime.min.replace(tzinfo=UTC)

#: Refused for a case and for a contact alike: PostgreSQL's infinities, and before 1900.
TOO_EARLY_OR_LATE = [
    MAX_UTC,
    MIN_UTC,
    datetime.fromisoformat("0001-01-01T00:00:00+01:00"),  # in UTC before year 1
    datetime.fromisoformat("9999-12-31T23:59:59-01:00"),  # in UTC after year 9999
    CASEWORK_EARLIEST_TIMESTAMP - timedelta(microseconds=1),
]


def case_opened(opened_at: datetime, title: str = "Doe") -> Case:
    return new_case(id=ID, title=title, family_name=None, opened_at=opened_at, created_by=ID, now=NOW)


def contact_at(occurred_at: datetime) -> Contact:
    return new_contact(
        id=ID,
        case_id=ID,
        contact_type="home_visit",
        occurred_at=occurred_at,
        summary="Saw both children.",
        created_by=ID,
        worker_name="Ann",
        now=NOW,
    )


def test_a_case_is_opened_between_1900_and_a_year_from_now() -> None:
    too_late = NOW + CASE_OPENED_FUTURE_TOLERANCE + timedelta(microseconds=1)
    for opened_at in [*TOO_EARLY_OR_LATE, too_late, datetime(2026, 1, 1)]:  # the last without a zone
        with pytest.raises(InvalidInput) as error:
            case_opened(opened_at)
        assert error.value.field == "opened_at", opened_at
    for opened_at in [
        CASEWORK_EARLIEST_TIMESTAMP,
        datetime(1900, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))),  # 1900-01-01T00:00Z
        NOW - timedelta(days=365 * 50),
        NOW,
        NOW + timedelta(days=99),  # a later date has always been accepted
        NOW + CASE_OPENED_FUTURE_TOLERANCE,
    ]:
        assert case_opened(opened_at).opened_at == opened_at
    with pytest.raises(InvalidInput) as error:  # the title is still checked first
        case_opened(MAX_UTC, title=" ")
    assert error.value.field == "title"


def test_a_contact_is_dated_between_1900_and_now() -> None:
    for occurred_at in TOO_EARLY_OR_LATE:
        with pytest.raises(InvalidInput) as error:
            contact_at(occurred_at)
        assert error.value.field == "occurred_at", occurred_at
    # The rules it had stay as they were.
    assert contact_at(CASEWORK_EARLIEST_TIMESTAMP).occurred_at == CASEWORK_EARLIEST_TIMESTAMP
    assert contact_at(NOW + CONTACT_FUTURE_TOLERANCE).occurred_at == NOW + CONTACT_FUTURE_TOLERANCE
    with pytest.raises(InvalidInput, match="in the future"):
        contact_at(NOW + CONTACT_FUTURE_TOLERANCE + timedelta(microseconds=1))
    with pytest.raises(InvalidInput, match="time zone"):
        contact_at(datetime(2026, 1, 1))


@pytest.mark.parametrize(("stored", "read"), [(datetime.max, MAX_UTC), (datetime.min, MIN_UTC)])
def test_infinity_read_back_without_a_zone_is_utc(stored: datetime, read: datetime) -> None:
    """asyncpg reads PostgreSQL's ``infinity`` as a naive ``datetime.max``: rows stored before the
    bounds still answer with a zone."""
    case = Case(id=ID, title="Doe", family_name=None, opened_at=stored, created_by=ID, created_at=NOW)
    contact = Contact(
        id=ID,
        case_id=ID,
        contact_type=ContactType.HOME_VISIT,
        occurred_at=stored,
        summary="x",
        created_by=ID,
        worker_name="Ann",
        created_at=NOW,
    )
    assert case.opened_at == read and case.opened_at.utcoffset() == timedelta(0)
    assert contact.occurred_at == read and contact.occurred_at.utcoffset() == timedelta(0)


KINDS = (datetime, uuid.UUID)


@pytest.mark.parametrize(("stored", "read"), [(datetime.max, MAX_UTC), (datetime.min, MIN_UTC)])
def test_a_sort_key_without_a_zone_pages_as_utc(stored: datetime, read: datetime) -> None:
    cursors = Cursors(TEST_CIPHER)
    cursor = cursors.encode("/v1/cases?", (stored, ID))
    assert cursors.decode("/v1/cases?", cursor, KINDS) == (read, ID)


def _old_cursor(scope: str, moment: str) -> str:
    """A cursor as the API made it before the fix: the timestamp without a zone."""
    document = json.dumps([scope, [{"t": moment}, {"u": str(ID)}]], separators=(",", ":"))
    payload = base64.urlsafe_b64encode(document.encode()).decode("ascii").rstrip("=")
    return f"{payload}.{TEST_CIPHER.blind_index('http.cursor', payload).replace(':', '.')}"


def test_a_cursor_handed_out_before_the_fix_still_pages_and_is_still_sealed() -> None:
    cursors = Cursors(TEST_CIPHER)
    old = _old_cursor("/v1/cases?", datetime.max.isoformat())
    assert cursors.decode("/v1/cases?", old, KINDS) == (MAX_UTC, ID)
    payload, _, mac = old.partition(".")
    forged = _old_cursor("/v1/cases?", "2000-01-01T00:00:00").partition(".")[0]
    for cursor, scope in [
        (old, "/v1/cases?status=open"),  # made for another list
        (f"{payload}.{mac[:-1]}{'B' if mac.endswith('A') else 'A'}", "/v1/cases?"),  # MAC altered
        (f"{forged}.{mac}", "/v1/cases?"),  # another value under this cursor's MAC
    ]:
        with pytest.raises(ProblemException) as error:
            cursors.decode(scope, cursor, KINDS)
        assert (error.value.status_code, error.value.code) == (400, "invalid-cursor")
