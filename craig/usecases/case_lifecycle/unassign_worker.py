"""Remove a worker's assignment to a case (supervisors and admins)."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal, Role
from craig.domain.audit import AuditAction
from craig.domain.errors import NotFound
from craig.domain.event_catalogue import CASE_UNASSIGNED
from craig.ports.cases import HasCases
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import CASE
from craig.usecases.case_lifecycle.guards import locked_visible_case
from craig.usecases.events import new_event, stage_event


class UnassignWorkerWork(AuditWork, HasCases, HasOutbox, Protocol):
    """The unit of work :class:`UnassignWorker` uses."""


class UnassignWorker:
    """403 for other roles; 404 when the case is unknown or the worker is not assigned to it.
    Stages ``cases.case_unassigned``. The audit entry (``unassign``, the worker's id in
    ``resource_ids``) commits with the change; a refusal (both 404s too) is recorded as
    ``denied``."""

    def __init__(self, uow: UnassignWorkerWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(self, principal: Principal, case_id: UUID, worker_sub: UUID) -> None:
        async with refusals_recorded(self.uow, principal, AuditAction.UNASSIGN, CASE, case_id, case_id=case_id):
            principal.require(Role.SUPERVISOR, Role.ADMIN)
            async with self.uow:
                await locked_visible_case(self.uow, principal, case_id)
                now = self.clock.now()
                if not await self.uow.cases.unassign(case_id, worker_sub, now):
                    raise NotFound("assignment of worker", worker_sub)
                payload = {
                    "case_id": str(case_id),
                    "worker_sub": str(worker_sub),
                    "unassigned_by": str(principal.sub),
                }
                event = new_event(CASE_UNASSIGNED, aggregate_id=case_id, payload=payload, now=now)
                await stage_event(self.uow, event)
                await record(
                    self.uow,
                    principal,
                    AuditAction.UNASSIGN,
                    CASE,
                    case_id,
                    case_id=case_id,
                    resource_ids=[worker_sub],
                    changed_fields=["assigned_workers"],
                )
                await self.uow.commit()
