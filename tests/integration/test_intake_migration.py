"""Migration 0009 upgrades, downgrades and upgrades again, seeding intake-triage exactly once."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from craig.adapters.postgres import migrations
from craig.adapters.postgres.database import libpq_dsn
from tests.support.services import admin_sql, quote_ident, run_async, with_database

pytestmark = pytest.mark.integration

TABLES = {"referrals", "rule_sets", "intake_rate_limits"}


def _state(url: str) -> tuple[set[str], list[tuple[str, int]]]:
    async def query() -> tuple[set[str], list[tuple[str, int]]]:
        conn = await asyncpg.connect(libpq_dsn(url))
        try:
            tables = {
                r["tablename"] for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
            }
            seeded = []
            if "rule_sets" in tables:
                seeded = [(r["name"], r["version"]) for r in await conn.fetch("SELECT name, version FROM rule_sets")]
        finally:
            await conn.close()
        return tables & TABLES, seeded

    return run_async(query)


def test_migration_0009_upgrades_downgrades_and_upgrades_again(pg_server_url: str) -> None:
    name = f"m_{uuid.uuid4().hex}"
    admin_sql(pg_server_url, f"CREATE DATABASE {quote_ident(name)}")
    url = with_database(pg_server_url, name)
    try:
        migrations.upgrade(url, "0009")
        assert _state(url) == (TABLES, [("intake-triage", 1)])
        migrations.downgrade(url, "0008")
        assert _state(url) == (set(), [])
        migrations.upgrade(url, "0009")
        assert _state(url) == (TABLES, [("intake-triage", 1)])
    finally:
        admin_sql(pg_server_url, f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)")
