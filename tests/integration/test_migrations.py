"""Migrations: every revision, and the whole chain, upgrade, downgrade and upgrade again on a
real PostgreSQL (embedded 18, or CRAIG_TEST_DATABASE_URL such as the system 15)."""

from __future__ import annotations

import pytest

from craig.adapters.postgres import migrations
from tests.support.services import admin_sql, fetch, public_tables, scratch_database

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

#: revision, the one before it, the tables it creates
REVISIONS = [
    ("0007", "0006", {"foster_homes", "placements"}),
    ("0008", "0007", {"partners", "exchange_transactions", "exchange_send_jobs", "exchange_rate_limits"}),
    ("0009", "0008", {"referrals", "rule_sets", "intake_rate_limits"}),
]


@pytest.mark.parametrize(("revision", "previous", "tables"), REVISIONS, ids=[r[0] for r in REVISIONS])
def test_a_revision_upgrades_downgrades_and_upgrades_again(
    pg_server_url: str, revision: str, previous: str, tables: set[str]
) -> None:
    with scratch_database(pg_server_url) as url:
        migrations.upgrade(url, revision)
        assert tables <= public_tables(url)
        migrations.downgrade(url, previous)
        assert not tables & public_tables(url)
        migrations.upgrade(url, revision)
        assert tables <= public_tables(url)


def test_0009_seeds_intake_triage_exactly_once(pg_server_url: str) -> None:
    with scratch_database(pg_server_url) as url:
        migrations.upgrade(url, "0009")
        migrations.downgrade(url, "0008")
        migrations.upgrade(url, "0009")
        seeded = [(r["name"], r["version"]) for r in fetch(url, "SELECT name, version FROM rule_sets")]
        assert seeded == [("intake-triage", 1)]


def test_0010_notifies_send_job_workers_on_insert_and_downgrades_cleanly(pg_server_url: str) -> None:
    triggers = "SELECT tgname FROM pg_trigger WHERE tgrelid = 'exchange_send_jobs'::regclass AND NOT tgisinternal"
    with scratch_database(pg_server_url) as url:
        migrations.upgrade(url, "0010")
        assert [r["tgname"] for r in fetch(url, triggers)] == ["exchange_send_jobs_notify"]
        migrations.downgrade(url, "0009")
        assert fetch(url, triggers) == []
        migrations.upgrade(url, "0010")
        assert [r["tgname"] for r in fetch(url, triggers)] == ["exchange_send_jobs_notify"]


def test_0014_gives_every_idempotency_slot_an_id_and_downgrades_cleanly(pg_server_url: str) -> None:
    column = (
        "SELECT is_nullable FROM information_schema.columns "
        "WHERE table_name = 'idempotency_responses' AND column_name = 'slot_id'"
    )
    with scratch_database(pg_server_url) as url:
        migrations.upgrade(url, "0010")
        for key in ("a", "b"):  # slots stored before the column existed
            admin_sql(
                url,
                "INSERT INTO idempotency_responses (cache_key, method, path, body_fingerprint, status) "
                f"VALUES ('{key}', 'POST', '/v1/x', 'fp', 'processing')",
            )
        migrations.upgrade(url, "0014")
        assert [r["is_nullable"] for r in fetch(url, column)] == ["NO"]
        ids = [r["slot_id"] for r in fetch(url, "SELECT slot_id FROM idempotency_responses")]
        assert len(set(ids)) == 2 and None not in ids
        migrations.downgrade(url, "0010")
        assert fetch(url, column) == []
        migrations.upgrade(url, "0014")
        assert [r["is_nullable"] for r in fetch(url, column)] == ["NO"]


def test_upgrade_downgrade_upgrade_the_whole_chain(pg_server_url: str) -> None:
    with scratch_database(pg_server_url) as url:
        migrations.upgrade_to_head(url)
        at_head = public_tables(url)
        assert {"idempotency_responses", "event_outbox", "event_inbox", "cases", "contact_attachments"} <= at_head
        assert all(tables <= at_head for _, _, tables in REVISIONS)
        migrations.downgrade(url, "base")
        assert public_tables(url) <= {"alembic_version"}
        migrations.upgrade_to_head(url)
        assert public_tables(url) == at_head
        assert migrations.head_revision() == "0014"
