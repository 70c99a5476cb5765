"""Use cases: open, read, list and assign cases.

Every use case takes the request's unit of work and commits its own block; whether that commit
is held by the idempotency layer is not its concern.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol
from uuid import UUID

import attrs

from craig.domain.access import Principal, Role
from craig.domain.cases import Case, can_see, new_case
from craig.domain.errors import NotFound
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import HasCases
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.case_lifecycle.guards import visible_open_case
from craig.usecases.events import new_event, stage_event
from craig.usecases.ids import new_id

EVENT_SOURCE = "craig-cases"


class OpenCaseWork(UnitOfWork, HasCases, HasOutbox, Protocol):
    """The unit of work :class:`OpenCase` uses."""


class GetCaseWork(UnitOfWork, HasCases, Protocol):
    """The unit of work :class:`GetCase` uses."""


class ListCasesWork(UnitOfWork, HasCases, Protocol):
    """The unit of work :class:`ListCases` uses."""


class AssignWorkerWork(UnitOfWork, HasCases, HasOutbox, Protocol):
    """The unit of work :class:`AssignWorker` uses."""


async def visible_case(uow: HasCases, principal: Principal, case_id: UUID) -> Case:
    """The case, inside the caller's block; :class:`NotFound` when it does not exist or the
    principal may not see it (404, never 403: another worker's case must not leak)."""
    case = await uow.cases.get(case_id)
    if case is None or not can_see(case, principal):
        raise NotFound("case", case_id)
    return case


class OpenCase:
    """Create a case owned by the principal and stage ``cases.case_opened``."""

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
                    source=EVENT_SOURCE,
                    type="cases.case_opened",
                    aggregate_type="case",
                    aggregate_id=case.id,
                    payload={"case_id": str(case.id), "created_by": str(case.created_by)},
                    now=now,
                ),
            )
            await self.uow.commit()
        return case


class GetCase:
    """One case the principal may see."""

    def __init__(self, uow: GetCaseWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, case_id: UUID) -> Case:
        async with self.uow:
            return await visible_case(self.uow, principal, case_id)


class ListCases:
    """The cases the principal may see, newest first, one page."""

    def __init__(self, uow: ListCasesWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, page: PageRequest) -> Page[Case]:
        async with self.uow:
            return await self.uow.cases.list_visible(principal, page)


class AssignWorker:
    """Supervisors and admins assign a case worker to a case (idempotent).

    Returns the case and whether the assignment is new; stages ``cases.case_assigned`` only then.
    Raises ``Forbidden`` for other roles (before looking the case up) and ``NotFound``.
    """

    def __init__(self, uow: AssignWorkerWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(self, principal: Principal, case_id: UUID, worker_sub: UUID) -> tuple[Case, bool]:
        principal.require(Role.SUPERVISOR, Role.ADMIN)
        async with self.uow:
            case = await visible_open_case(self.uow, principal, case_id, for_update=True)  # 409 case-closed
            assigned = await self.uow.cases.assign(case_id, worker_sub, principal.sub)
            if assigned:
                await stage_event(
                    self.uow,
                    new_event(
                        source=EVENT_SOURCE,
                        type="cases.case_assigned",
                        aggregate_type="case",
                        aggregate_id=case_id,
                        payload={
                            "case_id": str(case_id),
                            "worker_sub": str(worker_sub),
                            "assigned_by": str(principal.sub),
                        },
                        now=self.clock.now(),
                    ),
                )
                case = attrs.evolve(
                    case, assigned_workers=case.assigned_workers | {worker_sub}, version=case.version + 1
                )
            await self.uow.commit()
        return case, assigned
