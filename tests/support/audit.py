"""Audit-trail helpers for tests: entries, the chain store of a backend, and what only the
database owner can do (lower the retention floor, tamper with the tables)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import asyncpg

from craig.adapters.audit_log import UnitOfWorkAuditLog
from craig.adapters.memory.audit import RETENTION
from craig.adapters.memory.audit_chain import FloorRow, MemoryAuditChainStore
from craig.adapters.memory.uow import MemoryUnitOfWork
from craig.adapters.postgres.audit import PostgresAuditLog
from craig.adapters.postgres.audit_chain import PostgresAuditChainStore
from craig.adapters.postgres.database import libpq_dsn
from craig.domain.audit import AuditEntry
from craig.ports.audit import AuditChainStore, AuditLog
from craig.ports.unit_of_work import UnitOfWork
from tests.support.backends import Backend
from tests.support.ciphers import TEST_CIPHER


def entry(action: str = "read", resource_type: str = "case", **fields: Any) -> AuditEntry:
    return AuditEntry(id=uuid.uuid4(), action=action, resource_type=resource_type, **fields)


async def record(uow: UnitOfWork, *entries: AuditEntry) -> list[AuditEntry]:
    """Append ``entries`` in one committed transaction; the entries as stored."""
    async with uow:
        stored = await uow.audit.append(entries)
        await uow.commit()
    return stored


def audit_log(backend: Backend, *, record: bool = True) -> AuditLog:
    """The backend's log of entries on their own (``record=False``: the audit switch off)."""
    if backend.memory is not None:
        return UnitOfWorkAuditLog(lambda: MemoryUnitOfWork(backend.memory, TEST_CIPHER, record_audit=record))  # type: ignore[arg-type]
    assert backend.postgres is not None
    return PostgresAuditLog(backend.postgres, record=record)


def chain_store(backend: Backend) -> AuditChainStore:
    if backend.memory is not None:
        return MemoryAuditChainStore(backend.memory)
    assert backend.postgres is not None
    return PostgresAuditChainStore(backend.postgres)


async def superuser(url: str) -> asyncpg.Connection:
    """A raw connection as the test server's superuser (the URL's user)."""
    return await asyncpg.connect(libpq_dsn(url))


async def lower_floor(backend: Backend, retention: timedelta) -> None:
    """What only the tables' owner can do: lower the retention floor (DDL around an INSERT)."""
    if backend.memory is not None:
        async with backend.memory.transaction() as tx:
            rows = sorted(tx.rows(RETENTION), key=lambda row: row.id)
            next_id = rows[-1].id + 1 if rows else 1
            tx.put(RETENTION, next_id, FloorRow(next_id, retention, backend.memory.now()))
        return
    assert backend.postgres is not None
    conn = await superuser(backend.postgres.url)
    try:
        async with conn.transaction():
            await conn.execute("ALTER TABLE audit_retention DISABLE TRIGGER audit_retention_only_longer")
            await conn.execute("INSERT INTO audit_retention (retention) VALUES ($1)", retention)
            await conn.execute("ALTER TABLE audit_retention ENABLE ALWAYS TRIGGER audit_retention_only_longer")
    finally:
        await conn.close()
