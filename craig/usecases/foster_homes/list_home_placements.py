"""A foster home's placement history, newest first."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.cases import can_see
from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.placements import Placement, PlacementStatus, UnknownFosterHome
from craig.ports.cases import HasCases
from craig.ports.placements import HasFosterHomes, HasPlacements
from craig.ports.unit_of_work import UnitOfWork


class ListHomePlacementsWork(UnitOfWork, HasCases, HasFosterHomes, HasPlacements, Protocol):
    """The unit of work :class:`ListHomePlacements` uses."""


class ListHomePlacements:
    """404 for an unknown home. A principal who does not see every case gets only the
    placements of cases it may see: a page then holds fewer than ``limit`` items, and the
    cursor still continues after the last one read, so nothing is skipped."""

    def __init__(self, uow: ListHomePlacementsWork) -> None:
        self.uow = uow

    async def __call__(
        self, principal: Principal, home_id: UUID, status: PlacementStatus | None, keyset: Keyset
    ) -> KeysetPage[Placement]:
        async with self.uow:
            if await self.uow.foster_homes.get(home_id) is None:
                raise UnknownFosterHome(home_id)
            page = await self.uow.placements.list_for_home(home_id, status, keyset)
            if principal.sees_every_case:
                return page
            visible = []
            for placement in page.items:
                case = await self.uow.cases.get(placement.case_id)
                if case is not None and can_see(case, principal):
                    visible.append(placement)
        return KeysetPage(items=visible, next_after=page.next_after)
