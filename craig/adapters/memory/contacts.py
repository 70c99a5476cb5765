"""Memory adapter of the contact repository: summaries are stored as ciphertext, as in PostgreSQL."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from craig.adapters.memory.cases import CASES
from craig.adapters.memory.session import MemorySession
from craig.adapters.sealed_fields import CONTACT_SUMMARY, seal, unseal
from craig.domain.contacts import Contact, ContactType, contact_key
from craig.domain.keyset import Keyset, KeysetPage, after, keyset_page
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import ContactRepository
from craig.ports.errors import ConstraintViolation

CONTACTS = "contacts"


@attrs.frozen(kw_only=True)
class ContactRow:
    """The stored row: ``summary`` is ciphertext (``CONTACT_SUMMARY``)."""

    id: UUID
    case_id: UUID
    contact_type: str
    occurred_at: datetime
    summary: str
    created_by: UUID
    worker_name: str
    created_at: datetime


class MemoryContactRepository(ContactRepository):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    def _contact(self, row: ContactRow) -> Contact:
        return Contact(
            id=row.id,
            case_id=row.case_id,
            contact_type=ContactType(row.contact_type),
            occurred_at=row.occurred_at,
            summary=unseal(self.session.cipher, CONTACT_SUMMARY, row.id, row.summary),
            created_by=row.created_by,
            worker_name=row.worker_name,
            created_at=row.created_at,
        )

    async def add(self, contact: Contact) -> None:
        if (await self.session.tx()).get(CASES, contact.case_id) is None:
            raise ConstraintViolation("contacts_case_id_fkey", str(contact.case_id))
        if (await self.session.tx()).get(CONTACTS, contact.id) is not None:
            raise ConstraintViolation("contacts_pkey", str(contact.id))
        row = ContactRow(
            id=contact.id,
            case_id=contact.case_id,
            contact_type=str(contact.contact_type),
            occurred_at=contact.occurred_at,
            summary=seal(self.session.cipher, CONTACT_SUMMARY, contact.id, contact.summary),
            created_by=contact.created_by,
            worker_name=contact.worker_name,
            created_at=contact.created_at,
        )
        (await self.session.tx()).put(CONTACTS, contact.id, row)

    async def get(self, case_id: UUID, contact_id: UUID) -> Contact | None:
        row: ContactRow | None = (await self.session.tx()).get(CONTACTS, contact_id)
        if row is None or row.case_id != case_id:
            return None
        return self._contact(row)

    async def list_for_case(self, case_id: UUID, page: PageRequest) -> Page[Contact]:
        rows: list[ContactRow] = sorted(
            (await self.session.tx()).select(CONTACTS, lambda row: row.case_id == case_id),
            key=lambda row: (row.occurred_at, row.id),
            reverse=True,
        )
        items = [self._contact(row) for row in rows[page.offset : page.offset + page.per_page]]
        return Page(items=items, page=page.page, per_page=page.per_page, total=len(rows))

    async def page_for_case(self, case_id: UUID, keyset: Keyset) -> KeysetPage[Contact]:
        rows: list[ContactRow] = sorted(
            (await self.session.tx()).select(
                CONTACTS,
                lambda row: row.case_id == case_id and after((row.occurred_at, row.id), keyset, (True, True)),
            ),
            key=lambda row: (row.occurred_at, row.id),
            reverse=True,
        )
        return keyset_page([self._contact(row) for row in rows[: keyset.limit + 1]], keyset, contact_key)
