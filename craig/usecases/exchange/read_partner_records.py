"""Use case: one page of a partner's records, read from the partner's own API.

The partner is read in a short transaction of its own and called after it ends; the read takes
a slot of the partner's rate limit, shared with the send-job workers. A failing partner answers
502 (:func:`craig.usecases.exchange.partner_api.fetch_page`).
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.pages import Page, PageRequest
from craig.domain.partner_records import PartnerRecord, parse_record
from craig.ports.exchange import HasPartnerRateLimits, HasPartners, PartnerGateway
from craig.usecases.audit.record import AuditWork, audit_entry, record_alone
from craig.usecases.audit.resource_types import PARTNER_RECORDS
from craig.usecases.exchange.partner_api import PartnerApi, fetch_page, find_partner


class ReadPartnerRecordsWork(AuditWork, HasPartners, HasPartnerRateLimits, Protocol):
    """The unit of work :class:`ReadPartnerRecords` uses."""


class ReadPartnerRecords:
    """One page of the partner's records, through ``fetch_page`` (502 when the partner fails)."""

    def __init__(self, uow: ReadPartnerRecordsWork, gateway: PartnerGateway) -> None:
        self.uow = uow
        self.api = PartnerApi(gateway, uow)

    async def __call__(self, principal: Principal, partner_id: UUID, page: PageRequest) -> Page[PartnerRecord]:
        """The read is recorded (the records' ids) before the page is served."""
        partner = await find_partner(self.uow, partner_id)
        found = await fetch_page(self.api, partner, partner.records_path, page, parse_record)
        # After the partner answered, before the records are served: records whose read
        # cannot be recorded are not served.
        ids = [item.id for item in found.items]
        await record_alone(
            self.uow, audit_entry(principal, AuditAction.READ, PARTNER_RECORDS, partner_id, resource_ids=ids)
        )
        return found
