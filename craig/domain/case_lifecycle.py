"""A case's life, as pure decisions: details change, close, reopen.

::

    open --close (no active placement)--> closed --reopen (supervisor, admin)--> open

Every change returns the new case, one version higher, with the facts it causes. A closed case
takes no new contact, attachment, placement or assignment (:func:`require_open`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final
from uuid import UUID

import attrs

from craig.domain import event_catalogue as catalogue
from craig.domain.cases import Case, CaseStatus, checked_family_name, checked_title
from craig.domain.constants import CASE_REASON_MAX_LENGTH
from craig.domain.errors import Conflict, InvalidInput
from craig.domain.facts import Fact

CASE_UPDATED: Final = catalogue.CASE_UPDATED.name
CASE_CLOSED: Final = catalogue.CASE_CLOSED.name
CASE_REOPENED: Final = catalogue.CASE_REOPENED.name
CASE_UNASSIGNED: Final = catalogue.CASE_UNASSIGNED.name


class CaseClosed(Conflict):
    code = "case-closed"

    def __init__(self, case: Case) -> None:
        super().__init__(f"case {case.id} is closed; reopen it first")
        self.problem_extra: dict[str, Any] = {"case_id": str(case.id)}


class CaseHasActivePlacement(Conflict):
    code = "case-has-active-placement"

    def __init__(self, case: Case) -> None:
        super().__init__(f"case {case.id} has an active placement; end it before closing the case")
        self.problem_extra: dict[str, Any] = {"case_id": str(case.id)}


class InvalidCaseTransition(Conflict):
    code = "invalid-case-transition"

    def __init__(self, case: Case, wanted: CaseStatus) -> None:
        super().__init__(f"case {case.id} is already {case.status}")
        self.problem_extra: dict[str, Any] = {"status": case.status.value, "to": wanted.value}


def require_open(case: Case) -> None:
    """:class:`CaseClosed` (409) unless the case is open."""
    if not case.is_open:
        raise CaseClosed(case)


def checked_reason(reason: str) -> str:
    cleaned = reason.strip()
    if not cleaned:
        raise InvalidInput("reason must not be empty")
    if len(cleaned) > CASE_REASON_MAX_LENGTH:
        raise InvalidInput(f"reason must be at most {CASE_REASON_MAX_LENGTH} characters")
    return cleaned


def _fact(kind: str, case: Case, **payload: Any) -> Fact:
    return Fact(type=kind, aggregate_type="case", aggregate_id=case.id, payload={"case_id": str(case.id), **payload})


def _changed(case: Case, now: datetime, **changes: Any) -> Case:
    return attrs.evolve(case, **changes, updated_at=now, version=case.version + 1)


@attrs.frozen(kw_only=True)
class CaseDetails:
    """A details change: a field left None is left as it is; ``clear_family_name`` removes it."""

    title: str | None = None
    family_name: str | None = None
    clear_family_name: bool = False


def update_details(case: Case, details: CaseDetails, *, by: UUID, now: datetime) -> tuple[Case, tuple[Fact, ...]]:
    """The case with its new title and family name; ``cases.case_updated`` names the fields that
    changed (never their values). Nothing changes, and nothing is staged, when they are equal."""
    changes: dict[str, Any] = {}
    if details.title is not None:
        title = checked_title(details.title)
        if title != case.title:
            changes["title"] = title
    if details.clear_family_name or details.family_name is not None:
        family = None if details.clear_family_name else checked_family_name(details.family_name)
        if family != case.family_name:
            changes["family_name"] = family
    if not changes:
        return case, ()
    updated = _changed(case, now, **changes)
    return updated, (_fact(CASE_UPDATED, updated, fields=sorted(changes), updated_by=str(by)),)


def close(case: Case, reason: str, *, active_placements: int, by: UUID, now: datetime) -> tuple[Case, tuple[Fact, ...]]:
    """Close an open case that has no active placement."""
    cleaned = checked_reason(reason)
    if not case.is_open:
        raise InvalidCaseTransition(case, CaseStatus.CLOSED)
    if active_placements:
        raise CaseHasActivePlacement(case)
    closed = _changed(case, now, status=CaseStatus.CLOSED, closed_at=now, close_reason=cleaned)
    return closed, (_fact(CASE_CLOSED, closed, closed_by=str(by)),)


def reopen(case: Case, reason: str, *, by: UUID, now: datetime) -> tuple[Case, tuple[Fact, ...]]:
    """Reopen a closed case (who may is the use case's check). The closure is forgotten; the
    reason lives in the event's history, not in the case."""
    checked_reason(reason)
    if case.is_open:
        raise InvalidCaseTransition(case, CaseStatus.OPEN)
    reopened = _changed(case, now, status=CaseStatus.OPEN, closed_at=None, close_reason=None)
    return reopened, (_fact(CASE_REOPENED, reopened, reopened_by=str(by)),)
