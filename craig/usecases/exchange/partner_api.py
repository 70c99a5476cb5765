"""Reading a partner's paginated API (``fetch_page`` / ``fetch_page_or_empty``), shared by
:class:`ReadPartnerRecords` and :class:`ShowPartner`.

``fetch_page`` parses the page into typed items; an upstream failure raises
:class:`UpstreamError` naming the path, a body of the wrong shape :class:`UpstreamDeserializeError`
(both answered 502). ``fetch_page_or_empty`` returns an empty page instead, logs a warning, and
says what degraded, so a response built on it never shows an outage as "no data".
Reads share the partner's rate limit with the send-job workers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, TypeVar
from uuid import UUID

import attrs
import structlog

from craig.domain.constants import PARTNER_READ_MAX_RATE_WAIT
from craig.domain.errors import NotFound
from craig.domain.pages import Page, PageRequest
from craig.domain.partner_records import parse_page
from craig.domain.partners import Partner
from craig.ports.exchange import (
    HasPartnerRateLimits,
    HasPartners,
    PartnerGateway,
    PartnerRateLimited,
    UpstreamDeserializeError,
    UpstreamError,
)
from craig.ports.unit_of_work import UnitOfWork

log = structlog.get_logger(__name__)
T = TypeVar("T")


class PartnerApiWork(UnitOfWork, HasPartnerRateLimits, Protocol):
    """The unit of work :class:`PartnerApi` uses."""


class FindPartnerWork(UnitOfWork, HasPartners, Protocol):
    """What :func:`find_partner` uses."""


@attrs.frozen
class PartnerApi:
    """The gateway, and the unit of work whose short transactions take rate-limit slots."""

    gateway: PartnerGateway
    uow: PartnerApiWork

    async def pace(self, partner: Partner) -> None:
        async with self.uow:  # never open around the HTTP call: only around the reservation
            [slot] = await self.uow.partner_rate_limits.reserve(
                partner.id, partner.effective_rate_limit_rpm, 1, PARTNER_READ_MAX_RATE_WAIT
            )
            await self.uow.commit()
        if not slot.granted:
            raise PartnerRateLimited(partner.name, slot.wait)
        if slot.wait.total_seconds() > 0:
            await asyncio.sleep(slot.wait.total_seconds())


async def fetch_page(
    api: PartnerApi, partner: Partner, path: str, page: PageRequest, parse_item: Callable[[Any], T]
) -> Page[T]:
    params = {"page": str(page.page), "per_page": str(page.per_page)}
    raw = await api.gateway.get_json(partner, path, params, lambda: api.pace(partner))
    try:
        return parse_page(raw, parse_item, page)
    except ValueError as error:
        raise UpstreamDeserializeError(path, str(error)) from error


async def fetch_page_or_empty(
    api: PartnerApi, partner: Partner, path: str, page: PageRequest, parse_item: Callable[[Any], T]
) -> tuple[Page[T], list[str]]:
    """The page and ``[]``, or an empty page and what degraded (``"<partner> <path>: <why>"``)."""
    try:
        return await fetch_page(api, partner, path, page, parse_item), []
    except (UpstreamError, PartnerRateLimited) as error:
        log.warning("fetch_page_or_empty: returning an empty page", partner=partner.name, path=path, error=str(error))
        return Page.empty(page), [f"{partner.name} {path}: {error}"]


async def find_partner(uow: FindPartnerWork, partner_id: UUID) -> Partner:
    """The partner to read from, or :class:`NotFound`."""
    async with uow:  # a short read; the partner is called after the transaction ends
        partner = await uow.partners.get(partner_id)
    if partner is None:
        raise NotFound("partner", partner_id)
    return partner
