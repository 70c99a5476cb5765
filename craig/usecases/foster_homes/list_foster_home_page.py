"""Foster homes by name, one keyset page at a time."""

from __future__ import annotations

from typing import Protocol

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.placements import FosterHome
from craig.ports.placements import HasFosterHomes
from craig.usecases.audit.record import AuditWork, record
from craig.usecases.audit.resource_types import FOSTER_HOME


class ListFosterHomePageWork(AuditWork, HasFosterHomes, Protocol):
    """The unit of work :class:`ListFosterHomePage` uses."""


class ListFosterHomePage:
    """Every authenticated principal may read homes. Recorded as one ``list`` entry with the ids
    of the homes returned, in the read's transaction."""

    def __init__(self, uow: ListFosterHomePageWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, keyset: Keyset) -> KeysetPage[FosterHome]:
        async with self.uow:
            found = await self.uow.foster_homes.list_page(keyset)
            ids = [home.id for home in found.items]
            await record(self.uow, principal, AuditAction.LIST, FOSTER_HOME, resource_ids=ids)
            await self.uow.commit()
        return found
