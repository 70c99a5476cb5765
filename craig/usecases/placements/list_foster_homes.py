"""Use case: list foster homes.

Homes are not tied to a case, so every authenticated principal may list them, each with its
capacity and current occupancy.
"""

from __future__ import annotations

from typing import Protocol

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.pages import Page, PageRequest
from craig.domain.placements import FosterHome
from craig.ports.placements import HasFosterHomes
from craig.usecases.audit.record import AuditWork, record
from craig.usecases.audit.resource_types import FOSTER_HOME


class ListFosterHomesWork(AuditWork, HasFosterHomes, Protocol):
    """The unit of work :class:`ListFosterHomes` uses."""


class ListFosterHomes:
    """Homes by name, one page with the exact total. Recorded as one ``list`` entry with the ids
    of the homes returned, in the read's transaction."""

    def __init__(self, uow: ListFosterHomesWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, page: PageRequest) -> Page[FosterHome]:
        async with self.uow:
            found = await self.uow.foster_homes.list_by_name(page)
            ids = [home.id for home in found.items]
            await record(self.uow, principal, AuditAction.LIST, FOSTER_HOME, resource_ids=ids)
            await self.uow.commit()
        return found
