"""PostgreSQL adapter of the case repository: ``title`` and ``family_name`` are stored as ciphertext."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from sqlalchemy import text

from craig.adapters.postgres.errors import db_errors
from craig.adapters.postgres.session import PostgresSession
from craig.adapters.sealed_fields import CASE_FAMILY_NAME, CASE_TITLE, seal, seal_optional, unseal, unseal_optional
from craig.domain.access import Principal
from craig.domain.cases import Case
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import CaseRepository
from craig.ports.cipher import FieldCipher

_COLUMNS = """c.id, c.title, c.family_name, c.opened_at, c.created_by, c.created_at,
    coalesce((SELECT array_agg(a.worker_sub) FROM case_assignments a WHERE a.case_id = c.id), '{}')
        AS workers"""
_INSERT = text(
    """
    INSERT INTO cases (id, title, family_name, opened_at, created_by, created_at)
    VALUES (:id, :title, :family_name, :opened_at, :created_by, :created_at)
    """
)
_GET = text(f"SELECT {_COLUMNS} FROM cases c WHERE c.id = :id")
# A case worker sees the cases they created or are assigned to; supervisors and admins see all.
_VISIBLE = """(:all OR c.created_by = :sub
               OR EXISTS (SELECT 1 FROM case_assignments a WHERE a.case_id = c.id AND a.worker_sub = :sub))"""
_LIST = text(
    f"""
    SELECT {_COLUMNS} FROM cases c WHERE {_VISIBLE}
     ORDER BY c.created_at DESC, c.id DESC LIMIT :limit OFFSET :offset
    """
)
_COUNT = text(f"SELECT count(*) FROM cases c WHERE {_VISIBLE}")
_ASSIGN = text(
    """
    INSERT INTO case_assignments (case_id, worker_sub, assigned_by)
    VALUES (:case_id, :worker_sub, :assigned_by)
    ON CONFLICT DO NOTHING
    RETURNING case_id
    """
)


def _case(row: Mapping[Any, Any], cipher: FieldCipher) -> Case:
    return Case(
        id=row["id"],
        title=unseal(cipher, CASE_TITLE, row["id"], row["title"]),
        family_name=unseal_optional(cipher, CASE_FAMILY_NAME, row["id"], row["family_name"]),
        opened_at=row["opened_at"],
        created_by=row["created_by"],
        created_at=row["created_at"],
        assigned_workers=frozenset(row["workers"] or ()),
    )


class PostgresCaseRepository(CaseRepository):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    async def add(self, case: Case) -> None:
        async with db_errors():
            await self.session.execute(
                _INSERT,
                {
                    "id": case.id,
                    "title": seal(self.session.cipher, CASE_TITLE, case.id, case.title),
                    "family_name": seal_optional(self.session.cipher, CASE_FAMILY_NAME, case.id, case.family_name),
                    "opened_at": case.opened_at,
                    "created_by": case.created_by,
                    "created_at": case.created_at,
                },
            )

    async def get(self, case_id: UUID) -> Case | None:
        async with db_errors():
            row = (await self.session.execute(_GET, {"id": case_id})).mappings().first()
        return _case(row, self.session.cipher) if row else None

    async def list_visible(self, principal: Principal, page: PageRequest) -> Page[Case]:
        params = {"all": principal.sees_every_case, "sub": principal.sub}
        async with db_errors():
            conn = await self.session.connection()
            total = (await conn.execute(_COUNT, params)).scalar_one()
            rows = (await conn.execute(_LIST, {**params, "limit": page.per_page, "offset": page.offset})).mappings()
            items = [_case(row, self.session.cipher) for row in rows]
        return Page(items=items, page=page.page, per_page=page.per_page, total=total)

    async def assign(self, case_id: UUID, worker_sub: UUID, assigned_by: UUID) -> bool:
        async with db_errors():
            row = (
                await self.session.execute(
                    _ASSIGN, {"case_id": case_id, "worker_sub": worker_sub, "assigned_by": assigned_by}
                )
            ).first()
        return row is not None
