"""PostgreSQL adapter of the case repository: title, family name and closure reason are stored
as ciphertext, the family name also as its blind index (:mod:`craig.adapters.case_codec`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import text

from craig.adapters.case_codec import case_columns, case_from_columns, family_name_candidates, family_name_index
from craig.adapters.postgres.session import PostgresSession
from craig.adapters.sealed_fields import CASE_FAMILY_NAME, unseal_optional
from craig.domain.access import Principal
from craig.domain.case_search import CaseQuery
from craig.domain.cases import Case
from craig.domain.keyset import Keyset, KeysetPage, keyset_page
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import CaseRepository

_FIELDS = """c.id, c.title, c.family_name, c.opened_at, c.created_by, c.created_at, c.status, c.closed_at,
    c.close_reason, c.referral_id, c.updated_at, c.version"""
_COLUMNS = f"""{_FIELDS},
    coalesce((SELECT array_agg(a.worker_sub) FROM case_assignments a WHERE a.case_id = c.id), '{{}}')
        AS workers"""
_INSERT = text(
    """
    INSERT INTO cases (id, title, family_name, family_name_index, opened_at, created_by, created_at, status,
                       closed_at, close_reason, referral_id, updated_at, version)
    VALUES (:id, :title, :family_name, :family_name_index, :opened_at, :created_by, :created_at, :status,
            :closed_at, :close_reason, :referral_id, :updated_at, :version)
    """
)
_SAVE = text(
    """
    UPDATE cases SET title = :title, family_name = :family_name, family_name_index = :family_name_index,
                     status = :status, closed_at = :closed_at, close_reason = :close_reason,
                     updated_at = :updated_at, version = :version
     WHERE id = :id
    """
)
_GET = text(f"SELECT {_COLUMNS} FROM cases c WHERE c.id = :id")
_GET_FOR_UPDATE = text(f"SELECT {_COLUMNS} FROM cases c WHERE c.id = :id FOR NO KEY UPDATE OF c")
_GET_FOR_SHARE = text(f"SELECT {_COLUMNS} FROM cases c WHERE c.id = :id FOR SHARE OF c")
# Supervisors and admins see every case; everyone sees the cases assigned to them; case workers
# also the ones they opened (a screener does not keep the cases it opens).
VISIBLE_CASE = """(:all OR (:own AND c.created_by = :sub)
               OR EXISTS (SELECT 1 FROM case_assignments a WHERE a.case_id = c.id AND a.worker_sub = :sub))"""
_LIST = text(
    f"""
    SELECT {_COLUMNS} FROM cases c WHERE {VISIBLE_CASE}
     ORDER BY c.created_at DESC, c.id DESC LIMIT :limit OFFSET :offset
    """
)
_COUNT = text(f"SELECT count(*) FROM cases c WHERE {VISIBLE_CASE}")
_TOUCH = "UPDATE cases SET version = version + 1, updated_at = :now WHERE id = :case_id"
_ASSIGN = text(
    f"""
    WITH added AS (
        INSERT INTO case_assignments (case_id, worker_sub, assigned_by)
        VALUES (:case_id, :worker_sub, :assigned_by)
        ON CONFLICT DO NOTHING
        RETURNING case_id
    ), touched AS ({_TOUCH} AND EXISTS (SELECT 1 FROM added) RETURNING id)
    SELECT case_id FROM added
    """
)
_UNASSIGN = text(
    f"""
    WITH removed AS (
        DELETE FROM case_assignments WHERE case_id = :case_id AND worker_sub = :worker_sub RETURNING case_id
    ), touched AS ({_TOUCH} AND EXISTS (SELECT 1 FROM removed) RETURNING id)
    SELECT case_id FROM removed
    """
)
_STALE_INDEX = (
    "c.family_name IS NOT NULL AND (c.family_name_index IS NULL OR NOT starts_with(c.family_name_index, :prefix))"
)
_STALE_BATCH = text(
    f"""
    SELECT c.id, c.family_name FROM cases c
     WHERE {_STALE_INDEX} AND (CAST(:after AS uuid) IS NULL OR c.id > :after)
     ORDER BY c.id LIMIT :limit FOR NO KEY UPDATE
    """
)
_SET_INDEX = text("UPDATE cases SET family_name_index = :index WHERE id = :id")
_COUNT_STALE = text(f"SELECT count(*) FROM cases c WHERE {_STALE_INDEX}")


def visibility(principal: Principal) -> dict[str, Any]:
    return {"all": principal.sees_every_case, "own": principal.sees_cases_it_created, "sub": principal.sub}


def _search(query: CaseQuery, keyset: Keyset, family_indexes: list[str] | None) -> tuple[Any, dict[str, Any]]:
    """The statement of one search page: filters, then the keyset bound, in the sort's order."""
    where = [VISIBLE_CASE]
    params: dict[str, Any] = {"limit": keyset.limit + 1}
    if family_indexes is not None:
        where.append("c.family_name_index = ANY(:family_indexes)")
        params["family_indexes"] = family_indexes
    if query.status is not None:
        where.append("c.status = :status")
        params["status"] = query.status.value
    if query.assigned_to is not None:
        where.append("EXISTS (SELECT 1 FROM case_assignments f WHERE f.case_id = c.id AND f.worker_sub = :assignee)")
        params["assignee"] = query.assigned_to
    if query.opened_from is not None:
        where.append("c.opened_at >= :opened_from")
        params["opened_from"] = query.opened_from
    if query.opened_to is not None:
        where.append("c.opened_at <= :opened_to")
        params["opened_to"] = query.opened_to
    if query.referral_id is not None:
        where.append("c.referral_id = :referral_id")
        params["referral_id"] = query.referral_id
    column = f"c.{query.sort.column}"  # one of two fixed names, never the client's text
    direction = "DESC" if query.sort.descending else "ASC"
    if keyset.after is not None:
        where.append(f"({column}, c.id) {'<' if query.sort.descending else '>'} (:after_value, :after_id)")
        params["after_value"], params["after_id"] = keyset.after
    statement = f"""
        SELECT {_COLUMNS} FROM cases c WHERE {" AND ".join(where)}
         ORDER BY {column} {direction}, c.id {direction} LIMIT :limit
    """
    return statement, params


class PostgresCaseRepository(CaseRepository):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    def _case(self, row: Any) -> Case:
        return case_from_columns(self.session.cipher, row, row["workers"] or ())

    async def add(self, case: Case) -> None:
        await self.session.execute(_INSERT, case_columns(self.session.cipher, case))

    async def _one(self, statement: Any, case_id: UUID) -> Case | None:
        row = (await self.session.execute(statement, {"id": case_id})).mappings().first()
        return self._case(row) if row else None

    async def get(self, case_id: UUID) -> Case | None:
        return await self._one(_GET, case_id)

    async def get_for_update(self, case_id: UUID) -> Case | None:
        return await self._one(_GET_FOR_UPDATE, case_id)

    async def get_for_share(self, case_id: UUID) -> Case | None:
        return await self._one(_GET_FOR_SHARE, case_id)

    async def save(self, case: Case) -> None:
        await self.session.execute(_SAVE, case_columns(self.session.cipher, case))

    async def list_visible(self, principal: Principal, page: PageRequest) -> Page[Case]:
        params = visibility(principal)
        conn = await self.session.connection()
        total = (await conn.execute(_COUNT, params)).scalar_one()
        rows = (await conn.execute(_LIST, {**params, "limit": page.per_page, "offset": page.offset})).mappings()
        items = [self._case(row) for row in rows]
        return Page(items=items, page=page.page, per_page=page.per_page, total=total)

    async def search(self, principal: Principal, query: CaseQuery, keyset: Keyset) -> KeysetPage[Case]:
        family_indexes = (
            family_name_candidates(self.session.cipher, query.family_name) if query.family_name is not None else None
        )
        statement, params = _search(query, keyset, family_indexes)
        params.update(visibility(principal))
        rows = (await self.session.execute(text(statement), params)).mappings()
        items = [self._case(row) for row in rows]
        return keyset_page(items, keyset, query.sort_key)

    async def _change_assignment(self, statement: Any, case_id: UUID, **params: Any) -> bool:
        row = (await self.session.execute(statement, {"case_id": case_id, **params})).first()
        return row is not None

    async def assign(self, case_id: UUID, worker_sub: UUID, assigned_by: UUID, now: datetime) -> bool:
        return await self._change_assignment(_ASSIGN, case_id, worker_sub=worker_sub, assigned_by=assigned_by, now=now)

    async def unassign(self, case_id: UUID, worker_sub: UUID, now: datetime) -> bool:
        return await self._change_assignment(_UNASSIGN, case_id, worker_sub=worker_sub, now=now)

    async def reindex_family_names(self, after: UUID | None, limit: int) -> tuple[int, UUID | None]:
        cipher = self.session.cipher
        params = {"prefix": cipher.blind_index_prefix, "after": after, "limit": limit}
        rows = (await self.session.execute(_STALE_BATCH, params)).mappings().all()
        for row in rows:
            try:
                name = unseal_optional(cipher, CASE_FAMILY_NAME, row["id"], row["family_name"])
            except ValueError:
                continue  # undecryptable: left for the key rotation's own count
            await self.session.execute(_SET_INDEX, {"id": row["id"], "index": family_name_index(cipher, name)})
        return len(rows), (rows[-1]["id"] if rows else None)

    async def count_stale_family_name_indexes(self) -> int:
        return int(
            (await self.session.execute(_COUNT_STALE, {"prefix": self.session.cipher.blind_index_prefix})).scalar_one()
        )
