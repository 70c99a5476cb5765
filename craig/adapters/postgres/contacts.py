"""PostgreSQL adapter of the contact repository: ``summary`` is stored as ciphertext."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import text

from craig.adapters.postgres.driver import Row
from craig.adapters.postgres.session import PostgresSession
from craig.adapters.sealed_fields import CONTACT_SUMMARY, seal, unseal
from craig.domain.contacts import Contact, ContactType, contact_key
from craig.domain.keyset import Keyset, KeysetPage, keyset_page
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import ContactRepository

_COLUMNS = "id, case_id, contact_type, occurred_at, summary, created_by, worker_name, created_at"
_INSERT = text(
    f"""
    INSERT INTO contacts ({_COLUMNS})
    VALUES (:id, :case_id, :contact_type, :occurred_at, :summary, :created_by, :worker_name, :created_at)
    """
)
_GET = text(f"SELECT {_COLUMNS} FROM contacts WHERE id = :id AND case_id = :case_id")
_LIST = text(
    f"""
    SELECT {_COLUMNS} FROM contacts WHERE case_id = :case_id
     ORDER BY occurred_at DESC, id DESC LIMIT :limit OFFSET :offset
    """
)
_COUNT = text("SELECT count(*) FROM contacts WHERE case_id = :case_id")
_PAGE = (
    f"SELECT {_COLUMNS} FROM contacts WHERE case_id = :case_id {{after}} "
    "ORDER BY occurred_at DESC, id DESC LIMIT :limit"
)


class PostgresContactRepository(ContactRepository):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    def _contact(self, row: Row) -> Contact:
        return Contact(
            id=row["id"],
            case_id=row["case_id"],
            contact_type=ContactType(row["contact_type"]),
            occurred_at=row["occurred_at"],
            summary=unseal(self.session.cipher, CONTACT_SUMMARY, row["id"], row["summary"]),
            created_by=row["created_by"],
            worker_name=row["worker_name"],
            created_at=row["created_at"],
        )

    async def add(self, contact: Contact) -> None:
        await self.session.execute(
            _INSERT,
            {
                "id": contact.id,
                "case_id": contact.case_id,
                "contact_type": str(contact.contact_type),
                "occurred_at": contact.occurred_at,
                "summary": seal(self.session.cipher, CONTACT_SUMMARY, contact.id, contact.summary),
                "created_by": contact.created_by,
                "worker_name": contact.worker_name,
                "created_at": contact.created_at,
            },
        )

    async def get(self, case_id: UUID, contact_id: UUID) -> Contact | None:
        result = await self.session.execute(_GET, {"id": contact_id, "case_id": case_id})
        row = result.mappings().first()
        return self._contact(row) if row else None

    async def list_for_case(self, case_id: UUID, page: PageRequest) -> Page[Contact]:
        conn = await self.session.connection()
        total = (await conn.execute(_COUNT, {"case_id": case_id})).scalar_one()
        rows = (
            await conn.execute(_LIST, {"case_id": case_id, "limit": page.per_page, "offset": page.offset})
        ).mappings()
        items = [self._contact(row) for row in rows]
        return Page(items=items, page=page.page, per_page=page.per_page, total=total)

    async def page_for_case(self, case_id: UUID, keyset: Keyset) -> KeysetPage[Contact]:
        params: dict[str, Any] = {"case_id": case_id, "limit": keyset.limit + 1}
        bound = ""
        if keyset.after is not None:
            bound = "AND (occurred_at, id) < (:after_at, :after_id)"
            params["after_at"], params["after_id"] = keyset.after
        rows = (await self.session.execute(text(_PAGE.format(after=bound)), params)).mappings()
        items = [self._contact(row) for row in rows]
        return keyset_page(items, keyset, contact_key)
