"""Migration 0008 (partner exchange) upgrades, downgrades and upgrades again on real PostgreSQL."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from craig.adapters.postgres import migrations
from craig.adapters.postgres.database import libpq_dsn
from tests.support.services import admin_sql, quote_ident, run_async, with_database

pytestmark = pytest.mark.integration

TABLES = {"partners", "exchange_transactions", "exchange_send_jobs", "exchange_rate_limits"}


def _tables(url: str) -> set[str]:
    async def query() -> set[str]:
        conn = await asyncpg.connect(libpq_dsn(url))
        try:
            rows = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        finally:
            await conn.close()
        return {row["tablename"] for row in rows}

    return run_async(query)


def test_migration_0008_upgrades_downgrades_and_upgrades_again(pg_server_url: str) -> None:
    name = f"m_{uuid.uuid4().hex}"
    admin_sql(pg_server_url, f"CREATE DATABASE {quote_ident(name)}")
    url = with_database(pg_server_url, name)
    try:
        migrations.upgrade(url, "0008")
        assert _tables(url) >= TABLES
        migrations.downgrade(url, "0007")
        assert not _tables(url) & TABLES
        migrations.upgrade(url, "0008")
        assert _tables(url) >= TABLES
    finally:
        admin_sql(pg_server_url, f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)")
