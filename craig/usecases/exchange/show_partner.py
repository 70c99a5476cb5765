"""Use case: a partner's detail view, with a preview of its records.

The preview is read through ``fetch_page_or_empty``
(:mod:`craig.usecases.exchange.partner_api`): an outage shows as an empty preview with
``degraded`` saying why, never as "no records".
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

import attrs

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.constants import PARTNER_RECORDS_PREVIEW_SIZE
from craig.domain.pages import Page, PageRequest
from craig.domain.partner_records import PartnerRecord, parse_record
from craig.domain.partners import Partner
from craig.ports.exchange import HasPartnerRateLimits, HasPartners, PartnerGateway
from craig.usecases.audit.record import AuditWork, audit_entry, record_alone
from craig.usecases.audit.resource_types import PARTNER_RECORDS
from craig.usecases.exchange.partner_api import PartnerApi, fetch_page_or_empty, find_partner


class ShowPartnerWork(AuditWork, HasPartners, HasPartnerRateLimits, Protocol):
    """The unit of work :class:`ShowPartner` uses."""


@attrs.frozen
class PartnerOverview:
    partner: Partner
    recent_records: Page[PartnerRecord]
    degraded: list[str]


class ShowPartner:
    """A partner with a preview of its records through ``fetch_page_or_empty``: when the partner
    is down the partner is still shown, with an empty preview and ``degraded`` saying why."""

    def __init__(self, uow: ShowPartnerWork, gateway: PartnerGateway) -> None:
        self.uow = uow
        self.api = PartnerApi(gateway, uow)

    async def __call__(self, principal: Principal, partner_id: UUID) -> PartnerOverview:
        """The preview's read is recorded (the records' ids) before it is served."""
        partner = await find_partner(self.uow, partner_id)
        preview, degraded = await fetch_page_or_empty(
            self.api, partner, partner.records_path, PageRequest(1, PARTNER_RECORDS_PREVIEW_SIZE), parse_record
        )
        # After the partner answered, before the records are served: records whose read
        # cannot be recorded are not served.
        ids = [item.id for item in preview.items]
        await record_alone(
            self.uow, audit_entry(principal, AuditAction.READ, PARTNER_RECORDS, partner_id, resource_ids=ids)
        )
        return PartnerOverview(partner, preview, degraded)
