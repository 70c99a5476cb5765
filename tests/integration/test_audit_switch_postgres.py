"""CRAIG_AUDIT__ENABLED=false on PostgreSQL: the unit of work's appends write no row."""

from __future__ import annotations

import pytest

from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.adapters.unrecorded_audit import UnrecordedAuditRepository
from tests.support.audit import entry, record, superuser
from tests.support.ciphers import TEST_CIPHER

pytestmark = pytest.mark.integration


async def test_an_unrecorded_unit_of_work_writes_no_audit_row(pg_url: str) -> None:
    database = PostgresDatabase(pg_url, pool_size=2, max_overflow=0)
    try:
        unrecorded = PostgresUnitOfWork(database, TEST_CIPHER, record_audit=False)
        assert isinstance(unrecorded.audit, UnrecordedAuditRepository)
        await record(unrecorded, entry("read"), entry("update"))
        await record(PostgresUnitOfWork(database, TEST_CIPHER), entry("create"))
    finally:
        await database.dispose()
    conn = await superuser(pg_url)
    try:
        assert [row["action"] for row in await conn.fetch("SELECT action FROM audit_entries")] == ["create"]
    finally:
        await conn.close()
