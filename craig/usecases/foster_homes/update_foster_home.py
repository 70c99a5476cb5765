"""Change a foster home's name, capacity or status (supervisors and admins)."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal, Role
from craig.domain.foster_home_changes import FosterHomeChange, change_foster_home
from craig.domain.placements import FosterHome, UnknownFosterHome
from craig.domain.versions import IfMatch
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.ports.placements import HasFosterHomes
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.facts import stage_facts


class UpdateFosterHomeWork(UnitOfWork, HasFosterHomes, HasOutbox, Protocol):
    """The unit of work :class:`UpdateFosterHome` uses."""


class UpdateFosterHome:
    """403 for other roles, 404 for an unknown home, 412 when ``if_match`` is stale, 409 for a
    capacity below the occupancy or closing a home with active placements (nothing changes).

    The home is locked (``FOR NO KEY UPDATE``) as every placement change that moves its
    occupancy locks it, so a capacity change and an activation run one after the other and the
    later one sees the earlier one's result."""

    def __init__(self, uow: UpdateFosterHomeWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(
        self, principal: Principal, home_id: UUID, change: FosterHomeChange, if_match: IfMatch
    ) -> FosterHome:
        principal.require(Role.SUPERVISOR, Role.ADMIN)
        async with self.uow:
            home = await self.uow.foster_homes.get_foster_home_for_update(home_id)
            if home is None:
                raise UnknownFosterHome(home_id)
            if_match.check("foster home", home.version)
            now = self.clock.now()
            updated, facts = change_foster_home(home, change, by=principal.sub, now=now)
            if facts:
                await self.uow.foster_homes.update(updated)
                await stage_facts(self.uow, facts, now)
            await self.uow.commit()
        return updated
