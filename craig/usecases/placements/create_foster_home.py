"""Use case: register a foster home.

The caller's commit may be held by the HTTP idempotency layer; this use case never knows.
"""

from __future__ import annotations

from typing import Protocol

from craig.domain.access import Principal, Role
from craig.domain.audit import AuditAction
from craig.domain.placement_changes import foster_home_created
from craig.domain.placements import FosterHome, new_foster_home
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.ports.placements import HasFosterHomes
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import FOSTER_HOME
from craig.usecases.ids import new_id
from craig.usecases.placements.writes import stage_placement_events


class CreateFosterHomeWork(AuditWork, HasFosterHomes, HasOutbox, Protocol):
    """The unit of work :class:`CreateFosterHome` uses."""


class CreateFosterHome:
    """Register a home (supervisors and admins; 403 otherwise). Stages ``foster_home_created``.
    Recorded as ``create`` in the same transaction; a 403 as ``denied``."""

    def __init__(self, uow: CreateFosterHomeWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(self, principal: Principal, *, name: str, capacity: int) -> FosterHome:
        async with refusals_recorded(self.uow, principal, AuditAction.CREATE, FOSTER_HOME):
            principal.require(Role.SUPERVISOR, Role.ADMIN)
        now = self.clock.now()
        home = new_foster_home(id=new_id(), name=name, capacity=capacity, created_by=principal.sub, now=now)
        async with self.uow:
            await self.uow.foster_homes.add(home)
            await stage_placement_events(self.uow, (foster_home_created(home),), now)
            await record(self.uow, principal, AuditAction.CREATE, FOSTER_HOME, home.id)
            await self.uow.commit()
        return home
