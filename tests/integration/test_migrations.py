"""Every revision upgrades, downgrades and upgrades again on a fresh database."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy.engine import make_url

from craig.adapters.postgres.migrations import downgrade, head_revision, upgrade_to_head
from tests.support.services import admin_sql, quote_ident, run_async

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


async def _tables(url: str) -> set[str]:
    import asyncpg

    from craig.adapters.postgres.database import libpq_dsn

    conn = await asyncpg.connect(libpq_dsn(url))
    try:
        rows = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {row["tablename"] for row in rows}
    finally:
        await conn.close()


def test_upgrade_downgrade_upgrade_the_whole_chain(pg_server_url: str) -> None:
    name = f"migrations_{uuid.uuid4().hex[:10]}"
    admin_sql(pg_server_url, f"CREATE DATABASE {quote_ident(name)}")
    url = make_url(pg_server_url).set(database=name).render_as_string(hide_password=False)
    try:
        upgrade_to_head(url)
        at_head = run_async(lambda: _tables(url))
        assert {
            "idempotency_responses",
            "event_outbox",
            "event_inbox",
            "cases",
            "contact_attachments",
            "placements",
            "foster_homes",
            "exchange_send_jobs",
            "referrals",
            "rule_sets",
        } <= at_head
        downgrade(url, "base")
        assert run_async(lambda: _tables(url)) <= {"alembic_version"}
        upgrade_to_head(url)
        assert run_async(lambda: _tables(url)) == at_head
        assert head_revision() == "0009"
    finally:
        admin_sql(pg_server_url, f"DROP DATABASE {quote_ident(name)} WITH (FORCE)")
