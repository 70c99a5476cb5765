"""Partners by name, one keyset page at a time."""

from __future__ import annotations

from typing import Protocol

from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.partners import Partner
from craig.ports.exchange import HasPartners
from craig.ports.unit_of_work import UnitOfWork


class ListPartnerPageWork(UnitOfWork, HasPartners, Protocol):
    """The unit of work :class:`ListPartnerPage` uses."""


class ListPartnerPage:
    """Every authenticated principal may list partners."""

    def __init__(self, uow: ListPartnerPageWork) -> None:
        self.uow = uow

    async def __call__(self, keyset: Keyset) -> KeysetPage[Partner]:
        async with self.uow:
            return await self.uow.partners.list_page(keyset)
