"""Cases and who may see them."""

from __future__ import annotations

import enum
import unicodedata
from datetime import datetime
from typing import Protocol
from uuid import UUID

import attrs

from craig.domain.access import Principal
from craig.domain.constants import CASE_FAMILY_NAME_MAX_LENGTH, CASE_OPENED_FUTURE_TOLERANCE, CASE_TITLE_MAX_LENGTH
from craig.domain.errors import InvalidInput
from craig.domain.instants import checked_instant, stored_instant


class CaseStatus(enum.StrEnum):
    OPEN = "open"
    CLOSED = "closed"


def _created_at(case: Case) -> datetime:
    return case.created_at


@attrs.frozen(kw_only=True)
class Case:
    id: UUID
    title: str
    family_name: str | None
    opened_at: datetime = attrs.field(converter=stored_instant)
    created_by: UUID
    created_at: datetime
    assigned_workers: frozenset[UUID] = frozenset()
    status: CaseStatus = CaseStatus.OPEN
    closed_at: datetime | None = None
    close_reason: str | None = None
    #: The intake referral screened in to open this case, if any.
    referral_id: UUID | None = None
    updated_at: datetime = attrs.field(default=attrs.Factory(_created_at, takes_self=True))
    #: Grows by one with every change of the case (its ETag).
    version: int = 1

    @property
    def is_open(self) -> bool:
        return self.status is CaseStatus.OPEN


def normalise_family_name(name: str) -> str:
    """What a family-name search compares: Unicode compatibility form, case folded, runs of
    whitespace as one space, no leading or trailing space (``"  DE  la Cruz"`` = ``"de la cruz"``)."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return " ".join(folded.split())


class Ownership(Protocol):
    """What visibility depends on: a case, or a stored row of one."""

    @property
    def created_by(self) -> UUID: ...

    @property
    def assigned_workers(self) -> frozenset[UUID]: ...


def can_see(case: Ownership, principal: Principal) -> bool:
    """Case workers see the cases they created or are assigned to; supervisors and admins see all.

    Callers answer 404 (never 403) for a case the principal cannot see, so its existence does
    not leak.
    """
    if principal.sees_every_case:
        return True
    if principal.sub in case.assigned_workers:
        return True
    return principal.sees_cases_it_created and principal.sub == case.created_by


def checked_title(title: str) -> str:
    title = title.strip()
    if not title:
        raise InvalidInput("title must not be empty", field="title")
    if len(title) > CASE_TITLE_MAX_LENGTH:
        raise InvalidInput(f"title must be at most {CASE_TITLE_MAX_LENGTH} characters", field="title")
    return title


def checked_family_name(family_name: str | None) -> str | None:
    family = family_name.strip() if family_name else None
    if family is not None and len(family) > CASE_FAMILY_NAME_MAX_LENGTH:
        raise InvalidInput(f"family_name must be at most {CASE_FAMILY_NAME_MAX_LENGTH} characters", field="family_name")
    return family or None


def new_case(
    *,
    id: UUID,
    title: str,
    family_name: str | None,
    opened_at: datetime,
    created_by: UUID,
    now: datetime,
    referral_id: UUID | None = None,
) -> Case:
    """A validated case; ``opened_at`` has a zone, is not before 1900-01-01 and lies at most
    :data:`CASE_OPENED_FUTURE_TOLERANCE` after ``now``."""
    checked = checked_title(title)
    family = checked_family_name(family_name)
    opened = checked_instant(
        opened_at,
        field="opened_at",
        now=now,
        future_tolerance=CASE_OPENED_FUTURE_TOLERANCE,
        future=f"opened_at may lie at most {CASE_OPENED_FUTURE_TOLERANCE.days} days in the future",
    )
    return Case(
        id=id,
        title=checked,
        family_name=family,
        opened_at=opened,
        created_by=created_by,
        created_at=now,
        referral_id=referral_id,
    )
