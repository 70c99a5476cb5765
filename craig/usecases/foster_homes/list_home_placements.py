"""A foster home's placement history, newest first."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.placements import Placement, PlacementStatus, UnknownFosterHome
from craig.ports.placements import HasFosterHomes, HasPlacements
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import PLACEMENT


class ListHomePlacementsWork(AuditWork, HasFosterHomes, HasPlacements, Protocol):
    """The unit of work :class:`ListHomePlacements` uses."""


class ListHomePlacements:
    """404 for an unknown home. A principal who does not see every case gets only the
    placements of cases it may see, chosen in the read itself: a page and its cursor never name
    (nor, by coming back short or empty, count) a placement of a case hidden from it.

    Recorded as one ``list`` entry of placements naming the home (``resource_id``) and the ids
    returned, in the read's transaction; a 404 as ``denied``."""

    def __init__(self, uow: ListHomePlacementsWork) -> None:
        self.uow = uow

    async def __call__(
        self, principal: Principal, home_id: UUID, status: PlacementStatus | None, keyset: Keyset
    ) -> KeysetPage[Placement]:
        async with refusals_recorded(self.uow, principal, AuditAction.LIST, PLACEMENT, home_id), self.uow:
            if await self.uow.foster_homes.get(home_id) is None:
                raise UnknownFosterHome(home_id)
            page = await self.uow.placements.list_for_home(home_id, status, keyset, visible_to=principal)
            ids = [placement.id for placement in page.items]
            await record(self.uow, principal, AuditAction.LIST, PLACEMENT, home_id, resource_ids=ids)
            await self.uow.commit()
        return page
