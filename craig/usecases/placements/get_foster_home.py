"""Use case: read one foster home.

Homes are not tied to a case, so every authenticated principal may read them; an unknown home
answers 404 ``UnknownFosterHome``.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.placements import FosterHome, UnknownFosterHome
from craig.ports.placements import HasFosterHomes
from craig.ports.unit_of_work import UnitOfWork


class GetFosterHomeWork(UnitOfWork, HasFosterHomes, Protocol):
    """The unit of work :class:`GetFosterHome` uses."""


class GetFosterHome:
    """One home, or :class:`NotFound` (404). Every authenticated principal may read homes."""

    def __init__(self, uow: GetFosterHomeWork) -> None:
        self.uow = uow

    async def __call__(self, home_id: UUID) -> FosterHome:
        async with self.uow:
            home = await self.uow.foster_homes.get(home_id)
        if home is None:
            raise UnknownFosterHome(home_id)
        return home
