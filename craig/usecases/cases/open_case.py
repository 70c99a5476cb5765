"""Use case: open a case.

Every use case of a case takes the request's unit of work and commits its own block; whether
that commit is held by the idempotency layer is not its concern.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.cases import Case, new_case
from craig.domain.event_catalogue import CASE_OPENED
from craig.ports.cases import HasCases
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.usecases.audit.record import AuditWork, record
from craig.usecases.audit.resource_types import CASE
from craig.usecases.events.staging import new_event, stage_event
from craig.usecases.ids import new_id


class OpenCaseWork(AuditWork, HasCases, HasOutbox, Protocol):
    """The unit of work :class:`OpenCase` uses."""


class OpenCase:
    """Create a case owned by the principal and stage ``cases.case_opened``; the audit entry
    (``create``) commits with it."""

    def __init__(self, uow: OpenCaseWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(
        self, principal: Principal, *, title: str, family_name: str | None, opened_at: datetime | None
    ) -> Case:
        now = self.clock.now()
        case = new_case(
            id=new_id(),
            title=title,
            family_name=family_name,
            opened_at=opened_at or now,
            created_by=principal.sub,
            now=now,
        )
        async with self.uow:
            await self.uow.cases.add(case)
            await stage_event(
                self.uow,
                new_event(
                    CASE_OPENED,
                    aggregate_id=case.id,
                    payload={"case_id": str(case.id), "created_by": str(case.created_by), "referral_id": None},
                    now=now,
                ),
            )
            await record(self.uow, principal, AuditAction.CREATE, CASE, case.id, case_id=case.id)
            await self.uow.commit()
        return case
