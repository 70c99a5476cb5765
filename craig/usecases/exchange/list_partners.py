"""Use case: list the partner agencies.

Partners are shared by every case worker, so every authenticated principal may list them (only
admins register them: :class:`craig.usecases.exchange.register_partner.RegisterPartner`).
"""

from __future__ import annotations

from typing import Protocol

from craig.domain.pages import Page, PageRequest
from craig.domain.partners import Partner
from craig.ports.exchange import HasPartners
from craig.ports.unit_of_work import UnitOfWork


class ListPartnersWork(UnitOfWork, HasPartners, Protocol):
    """The unit of work :class:`ListPartners` uses."""


class ListPartners:
    """Partners by name, one page with the exact total. Every authenticated principal may list."""

    def __init__(self, uow: ListPartnersWork) -> None:
        self.uow = uow

    async def __call__(self, page: PageRequest) -> Page[Partner]:
        async with self.uow:
            return await self.uow.partners.list(page)
