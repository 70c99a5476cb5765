"""Contacts: what a case worker records after seeing, calling or writing to a family.

The summary is sensitive: repositories store it only through the field cipher.
"""

from __future__ import annotations

import enum
from datetime import datetime
from uuid import UUID

import attrs

from craig.domain.constants import CONTACT_FUTURE_TOLERANCE, CONTACT_SUMMARY_MAX_LENGTH
from craig.domain.errors import InvalidInput
from craig.domain.instants import checked_instant, stored_instant


class ContactType(enum.StrEnum):
    HOME_VISIT = "home_visit"
    OFFICE_VISIT = "office_visit"
    SCHOOL_VISIT = "school_visit"
    PHONE_CALL = "phone_call"
    VIDEO_CALL = "video_call"
    COLLATERAL = "collateral"
    CORRESPONDENCE = "correspondence"
    OTHER = "other"


@attrs.frozen(kw_only=True)
class Contact:
    id: UUID
    case_id: UUID
    contact_type: ContactType
    occurred_at: datetime = attrs.field(converter=stored_instant)
    summary: str = attrs.field(repr=False)
    created_by: UUID
    worker_name: str
    created_at: datetime


def parse_contact_type(raw: str) -> ContactType:
    try:
        return ContactType(raw.strip().lower())
    except ValueError:
        allowed = ", ".join(t.value for t in ContactType)
        raise InvalidInput(f"contact_type {raw!r} is not known; use one of: {allowed}", field="contact_type") from None


def new_contact(
    *,
    id: UUID,
    case_id: UUID,
    contact_type: str,
    occurred_at: datetime,
    summary: str,
    created_by: UUID,
    worker_name: str,
    now: datetime,
) -> Contact:
    """A validated contact: a known type, a non-empty bounded summary, a date after 1900 and not
    in the future."""
    kind = parse_contact_type(contact_type)
    occurred_at = checked_instant(
        occurred_at,
        field="occurred_at",
        now=now,
        future_tolerance=CONTACT_FUTURE_TOLERANCE,
        future="occurred_at lies in the future; record a contact once it has happened",
    )
    text = summary.strip()
    if not text:
        raise InvalidInput("summary must not be empty", field="summary")
    if len(text) > CONTACT_SUMMARY_MAX_LENGTH:
        raise InvalidInput(f"summary must be at most {CONTACT_SUMMARY_MAX_LENGTH} characters", field="summary")
    if "\x00" in text:
        raise InvalidInput("summary must not contain NUL characters", field="summary")
    return Contact(
        id=id,
        case_id=case_id,
        contact_type=kind,
        occurred_at=occurred_at,
        summary=text,
        created_by=created_by,
        worker_name=worker_name,
        created_at=now,
    )


def contact_key(contact: Contact) -> tuple[datetime, UUID]:
    """A case's contacts' order (most recent first when descending): ``occurred_at``, then id."""
    return (contact.occurred_at, contact.id)
