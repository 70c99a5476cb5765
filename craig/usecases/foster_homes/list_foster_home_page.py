"""Foster homes by name, one keyset page at a time."""

from __future__ import annotations

from typing import Protocol

from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.placements import FosterHome
from craig.ports.placements import HasFosterHomes
from craig.ports.unit_of_work import UnitOfWork


class ListFosterHomePageWork(UnitOfWork, HasFosterHomes, Protocol):
    """The unit of work :class:`ListFosterHomePage` uses."""


class ListFosterHomePage:
    """Every authenticated principal may read homes."""

    def __init__(self, uow: ListFosterHomePageWork) -> None:
        self.uow = uow

    async def __call__(self, keyset: Keyset) -> KeysetPage[FosterHome]:
        async with self.uow:
            return await self.uow.foster_homes.list_page(keyset)
