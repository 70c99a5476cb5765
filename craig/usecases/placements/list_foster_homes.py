"""Use case: list foster homes.

Homes are not tied to a case, so every authenticated principal may list them, each with its
capacity and current occupancy.
"""

from __future__ import annotations

from typing import Protocol

from craig.domain.pages import Page, PageRequest
from craig.domain.placements import FosterHome
from craig.ports.placements import HasFosterHomes
from craig.ports.unit_of_work import UnitOfWork


class ListFosterHomesWork(UnitOfWork, HasFosterHomes, Protocol):
    """The unit of work :class:`ListFosterHomes` uses."""


class ListFosterHomes:
    """Homes by name, one page with the exact total."""

    def __init__(self, uow: ListFosterHomesWork) -> None:
        self.uow = uow

    async def __call__(self, page: PageRequest) -> Page[FosterHome]:
        async with self.uow:
            return await self.uow.foster_homes.list_by_name(page)
