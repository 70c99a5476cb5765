"""Change a foster home's name, capacity or status (supervisors and admins)."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal, Role
from craig.domain.audit import AuditAction
from craig.domain.foster_home_changes import FosterHomeChange, change_foster_home
from craig.domain.placements import FosterHome, UnknownFosterHome
from craig.domain.versions import IfMatch
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.ports.placements import HasFosterHomes
from craig.usecases.audit.record import AuditWork, changed_field_names, record, refusals_recorded
from craig.usecases.audit.resource_types import FOSTER_HOME
from craig.usecases.facts import stage_facts

#: Fields every change moves on its own; an entry names only what the caller changed.
_BOOKKEEPING = ("version",)


class UpdateFosterHomeWork(AuditWork, HasFosterHomes, HasOutbox, Protocol):
    """The unit of work :class:`UpdateFosterHome` uses."""


class UpdateFosterHome:
    """403 for other roles, 404 for an unknown home, 412 when ``if_match`` is stale, 409 for a
    capacity below the occupancy or closing a home with active placements (nothing changes).

    The home is locked (``FOR NO KEY UPDATE``) as every placement change that moves its
    occupancy locks it, so a capacity change and an activation run one after the other and the
    later one sees the earlier one's result.

    Recorded as ``update`` with the names (never the values) of the fields that changed, in the
    same transaction; a 403 or 404 as ``denied``."""

    def __init__(self, uow: UpdateFosterHomeWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(
        self, principal: Principal, home_id: UUID, change: FosterHomeChange, if_match: IfMatch
    ) -> FosterHome:
        async with refusals_recorded(self.uow, principal, AuditAction.UPDATE, FOSTER_HOME, home_id):
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
                changed = changed_field_names(home, updated, ignore=_BOOKKEEPING)
                await record(self.uow, principal, AuditAction.UPDATE, FOSTER_HOME, home.id, changed_fields=changed)
                await self.uow.commit()
        return updated
