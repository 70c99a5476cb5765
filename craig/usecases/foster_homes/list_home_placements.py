"""A foster home's placement history, newest first."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.cases import can_see
from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.placements import Placement, PlacementStatus, UnknownFosterHome
from craig.ports.cases import HasCases
from craig.ports.placements import HasFosterHomes, HasPlacements
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import PLACEMENT


class ListHomePlacementsWork(AuditWork, HasCases, HasFosterHomes, HasPlacements, Protocol):
    """The unit of work :class:`ListHomePlacements` uses."""


class ListHomePlacements:
    """404 for an unknown home. A principal who does not see every case gets only the
    placements of cases it may see: a page then holds fewer than ``limit`` items, and the
    cursor still continues after the last one read, so nothing is skipped.

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
            page = await self.uow.placements.list_for_home(home_id, status, keyset)
            visible = list(page.items)
            if not principal.sees_every_case:
                visible = []
                for placement in page.items:
                    case = await self.uow.cases.get(placement.case_id)
                    if case is not None and can_see(case, principal):
                        visible.append(placement)
            ids = [placement.id for placement in visible]
            await record(self.uow, principal, AuditAction.LIST, PLACEMENT, home_id, resource_ids=ids)
            await self.uow.commit()
        return KeysetPage(items=visible, next_after=page.next_after)
