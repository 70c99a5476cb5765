"""Revisions 0005 (legacy contact_attachments) and 0006 (object_status) on a real server:
legacy rows are backfilled as ``present``, the default is dropped, the partial index exists, and
both revisions downgrade and upgrade again."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import asyncpg
import pytest

from craig.adapters.postgres import migrations
from craig.adapters.postgres.database import libpq_dsn
from tests.support.services import admin_sql, quote_ident, with_database

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


@pytest.fixture
def empty_db(pg_server_url: str) -> Iterator[str]:
    name = f"t_mig_{uuid.uuid4().hex[:12]}"
    admin_sql(pg_server_url, f"CREATE DATABASE {quote_ident(name)}")
    try:
        yield with_database(pg_server_url, name)
    finally:
        admin_sql(pg_server_url, f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)")


async def migrate(url: str, revision: str, *, down: bool = False) -> None:
    await asyncio.to_thread(migrations.downgrade if down else migrations.upgrade, url, revision)


LEGACY_ROW = """
    WITH c AS (INSERT INTO cases (id, title, opened_at, created_by) VALUES ($1, 'Doe', now(), $2) RETURNING id),
         k AS (INSERT INTO contacts (id, case_id, contact_type, occurred_at, summary, created_by, worker_name)
               SELECT $3, id, 'home_visit', now(), 'ciphertext', $2, 'Ann' FROM c RETURNING id)
    INSERT INTO contact_attachments (id, contact_id, file_name, content_type, file_size, object_key, uploaded_by, worker_name)
    SELECT $4, id, 'old.pdf', 'application/pdf', 10, 'cases/contacts/legacy/old.pdf', $2, 'Ann' FROM k
"""


async def test_object_status_backfill_default_index_and_downgrade(empty_db: str) -> None:
    await migrate(empty_db, "0005")
    conn = await asyncpg.connect(libpq_dsn(empty_db))
    try:
        legacy = uuid.uuid4()
        await conn.execute(LEGACY_ROW, uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), legacy)
        await migrate(empty_db, "0006")
        assert await conn.fetchval("SELECT object_status FROM contact_attachments WHERE id = $1", legacy) == "present"
        assert (
            await conn.fetchval(
                "SELECT column_default FROM information_schema.columns "
                "WHERE table_name = 'contact_attachments' AND column_name = 'object_status'"
            )
            is None
        )
        with pytest.raises(asyncpg.NotNullViolationError):
            await conn.execute(
                "INSERT INTO contact_attachments (id, contact_id, file_name, content_type, file_size, object_key,"
                " uploaded_by, worker_name) SELECT $1, contact_id, 'n', 'text/plain', 1, 'k2', uploaded_by, 'Ann'"
                " FROM contact_attachments LIMIT 1",
                uuid.uuid4(),
            )
        with pytest.raises(asyncpg.CheckViolationError):
            await conn.execute("UPDATE contact_attachments SET object_status = 'lost'")
        index = await conn.fetchval(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'idx_contact_attachments_pending'"
        )
        assert "(created_at)" in index and "WHERE (object_status = 'pending'::text)" in index

        await migrate(empty_db, "0005", down=True)
        assert await conn.fetchval("SELECT count(*) FROM contact_attachments") == 1
        assert (
            await conn.fetchval("SELECT count(*) FROM information_schema.columns WHERE column_name = 'object_status'")
            == 0
        )
        await migrate(empty_db, "0004", down=True)
        assert await conn.fetchval("SELECT to_regclass('contacts')") is None
        await migrate(empty_db, "head")
        assert await conn.fetchval("SELECT to_regclass('contact_attachments')") == "contact_attachments"
    finally:
        await conn.close()
