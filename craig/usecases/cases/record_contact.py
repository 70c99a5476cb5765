"""Use case: record a contact (a visit, a call, a meeting) on a case.

The summary travels in the domain as plaintext and is encrypted by the repository; events
never carry it (the outbox is not encrypted).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.contacts import Contact, new_contact
from craig.domain.event_catalogue import CONTACT_RECORDED
from craig.ports.cases import HasCases, HasContacts
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import CONTACT
from craig.usecases.case_lifecycle.guards import visible_open_case
from craig.usecases.events.staging import new_event, stage_event
from craig.usecases.ids import new_id


class RecordContactWork(AuditWork, HasCases, HasContacts, HasOutbox, Protocol):
    """The unit of work :class:`RecordContact` uses."""


class RecordContact:
    """Record a contact on a visible case and stage ``cases.contact_recorded``; the audit entry
    (``create``) commits with it, a refusal is recorded as ``denied``."""

    def __init__(self, uow: RecordContactWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(
        self, principal: Principal, case_id: UUID, *, contact_type: str, occurred_at: datetime, summary: str
    ) -> Contact:
        now = self.clock.now()
        contact = new_contact(
            id=new_id(),
            case_id=case_id,
            contact_type=contact_type,
            occurred_at=occurred_at,
            summary=summary,
            created_by=principal.sub,
            worker_name=principal.name,
            now=now,
        )
        async with refusals_recorded(self.uow, principal, AuditAction.CREATE, CONTACT, case_id=case_id), self.uow:
            await visible_open_case(self.uow, principal, case_id)  # 409 case-closed
            await self.uow.contacts.add(contact)
            await stage_event(
                self.uow,
                new_event(
                    CONTACT_RECORDED,
                    aggregate_id=case_id,
                    payload={
                        "case_id": str(case_id),
                        "contact_id": str(contact.id),
                        "contact_type": str(contact.contact_type),
                    },
                    now=now,
                ),
            )
            await record(self.uow, principal, AuditAction.CREATE, CONTACT, contact.id, case_id=case_id)
            await self.uow.commit()
        return contact
