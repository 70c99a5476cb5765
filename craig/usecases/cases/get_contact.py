"""Use case: read one contact of a case.

The summary is decrypted by the repository. A contact of a case the principal may not see
answers 404, like an unknown one (:func:`craig.usecases.cases.visibility.visible_contact`).
The read is recorded in the audit trail (a refused one as ``denied``).
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.contacts import Contact
from craig.ports.cases import HasCases, HasContacts
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import CONTACT
from craig.usecases.cases.visibility import visible_contact


class GetContactWork(AuditWork, HasCases, HasContacts, Protocol):
    """The unit of work :class:`GetContact` uses."""


class GetContact:
    """One contact of a case the principal may see."""

    def __init__(self, uow: GetContactWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, case_id: UUID, contact_id: UUID) -> Contact:
        async with refusals_recorded(self.uow, principal, AuditAction.READ, CONTACT, contact_id, case_id=case_id):
            async with self.uow:
                contact = await visible_contact(self.uow, principal, case_id, contact_id)
                await record(self.uow, principal, AuditAction.READ, CONTACT, contact_id, case_id=case_id)
                await self.uow.commit()
        return contact
