"""Cases and who may see them."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol
from uuid import UUID

import attrs

from craig.domain.access import Principal
from craig.domain.constants import CASE_FAMILY_NAME_MAX_LENGTH, CASE_TITLE_MAX_LENGTH
from craig.domain.errors import InvalidInput


@attrs.frozen(kw_only=True)
class Case:
    id: UUID
    title: str
    family_name: str | None
    opened_at: datetime
    created_by: UUID
    created_at: datetime
    assigned_workers: frozenset[UUID] = frozenset()


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
    return principal.sub == case.created_by or principal.sub in case.assigned_workers


def new_case(
    *, id: UUID, title: str, family_name: str | None, opened_at: datetime, created_by: UUID, now: datetime
) -> Case:
    title = title.strip()
    if not title:
        raise InvalidInput("title must not be empty", field="title")
    if len(title) > CASE_TITLE_MAX_LENGTH:
        raise InvalidInput(f"title must be at most {CASE_TITLE_MAX_LENGTH} characters", field="title")
    family = family_name.strip() if family_name else None
    if family is not None and len(family) > CASE_FAMILY_NAME_MAX_LENGTH:
        raise InvalidInput(f"family_name must be at most {CASE_FAMILY_NAME_MAX_LENGTH} characters", field="family_name")
    return Case(
        id=id,
        title=title,
        family_name=family or None,
        opened_at=opened_at,
        created_by=created_by,
        created_at=now,
    )
