"""Use case: assign a case worker to a case."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

import attrs

from craig.domain.access import Principal, Role
from craig.domain.audit import AuditAction
from craig.domain.cases import Case
from craig.domain.event_catalogue import CASE_ASSIGNED
from craig.ports.cases import HasCases
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import CASE
from craig.usecases.case_lifecycle.guards import visible_open_case
from craig.usecases.events.staging import new_event, stage_event


class AssignWorkerWork(AuditWork, HasCases, HasOutbox, Protocol):
    """The unit of work :class:`AssignWorker` uses."""


class AssignWorker:
    """Supervisors and admins assign a case worker to a case (idempotent).

    Returns the case and whether the assignment is new; stages ``cases.case_assigned`` only then.
    Raises ``Forbidden`` for other roles (before looking the case up) and ``NotFound``. The audit
    entry (``assign``, the worker's id in ``resource_ids``, ``assigned_workers`` changed when the
    assignment is new) commits with the assignment; a refusal is recorded as ``denied``.
    """

    def __init__(self, uow: AssignWorkerWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(self, principal: Principal, case_id: UUID, worker_sub: UUID) -> tuple[Case, bool]:
        async with refusals_recorded(self.uow, principal, AuditAction.ASSIGN, CASE, case_id, case_id=case_id):
            principal.require(Role.SUPERVISOR, Role.ADMIN)
            return await self._assign(principal, case_id, worker_sub)

    async def _assign(self, principal: Principal, case_id: UUID, worker_sub: UUID) -> tuple[Case, bool]:
        async with self.uow:
            case = await visible_open_case(self.uow, principal, case_id, for_update=True)  # 409 case-closed
            now = self.clock.now()
            assigned = await self.uow.cases.assign(case_id, worker_sub, principal.sub, now)
            if assigned:
                await stage_event(
                    self.uow,
                    new_event(
                        CASE_ASSIGNED,
                        aggregate_id=case_id,
                        payload={
                            "case_id": str(case_id),
                            "worker_sub": str(worker_sub),
                            "assigned_by": str(principal.sub),
                        },
                        now=now,
                    ),
                )
                # The case as stored: the body answered under the new ETag is the one a read gets.
                case = attrs.evolve(
                    case,
                    assigned_workers=case.assigned_workers | {worker_sub},
                    version=case.version + 1,
                    updated_at=now,
                )
            await record(
                self.uow,
                principal,
                AuditAction.ASSIGN,
                CASE,
                case_id,
                case_id=case_id,
                resource_ids=[worker_sub],
                changed_fields=["assigned_workers"] if assigned else [],
            )
            await self.uow.commit()
        return case, assigned
