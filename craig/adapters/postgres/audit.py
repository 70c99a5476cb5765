"""PostgreSQL adapter of ``uow.audit``: plain INSERTs into ``audit_entries``, newest-first reads.

The insert trigger stamps ``at`` (the transaction's ``now()``) and ``xid`` (the writing
transaction); nothing here takes a lock another request could wait on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import text

from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.session import PostgresSession
from craig.domain.audit import READ_ACTIONS, AuditEntry, AuditOutcome
from craig.domain.audit_query import AuditCursor, AuditFilter, AuditPage
from craig.ports.audit import AuditLog, AuditRepository

ENTRY_COLUMNS = """e.id, e.at, e.actor, e.actor_role, e.actor_name, e.action, e.resource_type, e.resource_id,
    e.resource_ids, e.case_id, e.outcome, e.request_id, e.client_ip, e.changed_fields"""
_INSERT = text(
    """
    INSERT INTO audit_entries (id, actor, actor_role, actor_name, action, resource_type, resource_id,
                               resource_ids, case_id, outcome, request_id, client_ip, changed_fields)
    VALUES (:id, :actor, :actor_role, :actor_name, :action, :resource_type, :resource_id,
            :resource_ids, :case_id, :outcome, :request_id, :client_ip, :changed_fields)
    RETURNING at
    """
)
#: The filter's fields, as SQL conditions on ``e`` (fixed text: values are always parameters).
_CONDITIONS = {
    "case_id": "e.case_id = :case_id",
    "actor": "e.actor = :actor",
    "action": "e.action = :action",
    "resource_type": "e.resource_type = :resource_type",
    "outcome": "e.outcome = :outcome",
    "since": "e.at >= :since",
    "until": "e.at < :until",
}
#: Fixed text from the closed vocabulary (never a client's value).
_CHANGES_ONLY = "e.outcome = '{}' AND e.action NOT IN ({})".format(
    AuditOutcome.ALLOWED.value, ", ".join(f"'{action.value}'" for action in sorted(READ_ACTIONS))
)
_BEFORE_CURSOR = "(e.at, e.id) < (:cursor_at, :cursor_id)"


def entry_from_row(row: Mapping[Any, Any], seq: int | None) -> AuditEntry:
    return AuditEntry(
        id=row["id"],
        at=row["at"],
        seq=seq,
        actor=row["actor"],
        actor_role=row["actor_role"],
        actor_name=row["actor_name"],
        action=row["action"],
        resource_type=row["resource_type"],
        resource_id=row["resource_id"],
        resource_ids=tuple(row["resource_ids"] or ()),
        case_id=row["case_id"],
        outcome=row["outcome"],
        request_id=row["request_id"],
        client_ip=row["client_ip"],
        changed_fields=tuple(row["changed_fields"] or ()),
    )


def _values(entry: AuditEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "actor": entry.actor,
        "actor_role": entry.actor_role,
        "actor_name": entry.actor_name,
        "action": entry.action.value,
        "resource_type": entry.resource_type,
        "resource_id": entry.resource_id,
        "resource_ids": list(entry.resource_ids),
        "case_id": entry.case_id,
        "outcome": entry.outcome.value,
        "request_id": entry.request_id,
        "client_ip": entry.client_ip,
        "changed_fields": list(entry.changed_fields),
    }


def _query(where: AuditFilter, cursor: AuditCursor | None) -> tuple[str, dict[str, Any]]:
    conditions, params = [], {}
    for name, condition in _CONDITIONS.items():
        value = getattr(where, name)
        if value is not None:
            conditions.append(condition)
            params[name] = getattr(value, "value", value)
    if where.changes_only:
        conditions.append(_CHANGES_ONLY)
    if cursor is not None:
        conditions.append(_BEFORE_CURSOR)
        params |= {"cursor_at": cursor.at, "cursor_id": cursor.id}
    clause = " AND ".join(conditions) or "TRUE"
    sql = f"""
        SELECT {ENTRY_COLUMNS}, c.seq FROM audit_entries e LEFT JOIN audit_chain c ON c.entry_id = e.id
         WHERE {clause} ORDER BY e.at DESC, e.id DESC LIMIT :limit
    """
    return sql, params


class PostgresAuditLog(AuditLog):
    """Entries on their own: one entry is ONE statement, committed by itself (no BEGIN and
    COMMIT round trips); several share a transaction. ``record=False``
    (``CRAIG_AUDIT__ENABLED=false``, benchmarks only) drops them, as the unit of work does."""

    def __init__(self, database: PostgresDatabase, record: bool = True) -> None:
        self.database = database
        self.record = record

    async def append(self, entries: Sequence[AuditEntry]) -> None:
        if not self.record or not entries:
            return
        if len(entries) == 1:
            async with self.database.connect() as conn:
                await conn.execute(_INSERT, _values(entries[0]))
            return
        async with self.database.transaction() as conn:
            for entry in entries:
                await conn.execute(_INSERT, _values(entry))


class PostgresAuditRepository(AuditRepository):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    async def append(self, entries: Sequence[AuditEntry]) -> list[AuditEntry]:
        stored = []
        for entry in entries:
            at = (await self.session.execute(_INSERT, _values(entry))).scalar_one()
            stored.append(entry.written_at(at))
        return stored

    async def list(self, where: AuditFilter, limit: int, cursor: AuditCursor | None = None) -> AuditPage:
        sql, params = _query(where, cursor)
        rows = (await self.session.execute(text(sql), {**params, "limit": limit + 1})).mappings().all()
        return AuditPage.of([entry_from_row(row, row["seq"]) for row in rows], limit)

    async def case_history(self, case_id: UUID, limit: int, cursor: AuditCursor | None = None) -> AuditPage:
        return await self.list(AuditFilter(case_id=case_id, changes_only=True), limit, cursor)
