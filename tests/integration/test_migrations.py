"""Migrations: every revision, and the whole chain, upgrade, downgrade and upgrade again on a
real PostgreSQL (embedded 18, or CRAIG_TEST_DATABASE_URL such as the system 15)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid

import asyncpg
import pytest
from sqlalchemy.exc import DBAPIError

from craig.adapters.postgres import migrations
from craig.adapters.postgres.database import libpq_dsn
from tests.support.services import admin_sql, fetch, public_tables, scratch_database

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

#: revision, the one before it, the tables it creates
REVISIONS = [
    ("0007", "0006", {"foster_homes", "placements"}),
    ("0008", "0007", {"partners", "exchange_transactions", "exchange_send_jobs", "exchange_rate_limits"}),
    ("0009", "0008", {"referrals", "rule_sets", "intake_rate_limits"}),
]


def assert_up_down_up(server_url: str, revision: str, previous: str, query: str, *, applied: int, undone: int) -> None:
    """In a scratch database: upgrade to ``revision``, downgrade to ``previous``, upgrade again;
    ``query`` finds ``applied`` rows after each upgrade and ``undone`` after the downgrade."""
    with scratch_database(server_url) as url:
        migrations.upgrade(url, revision)
        assert len(fetch(url, query)) == applied
        migrations.downgrade(url, previous)
        assert len(fetch(url, query)) == undone
        migrations.upgrade(url, revision)
        assert len(fetch(url, query)) == applied


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


def test_0019_adds_the_send_jobs_origin_columns_and_drops_them_on_downgrade(pg_server_url: str) -> None:
    columns = (
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'exchange_send_jobs' "
        "AND column_name IN ('origin_request_id', 'traceparent') ORDER BY column_name"
    )
    with scratch_database(pg_server_url) as url:
        migrations.upgrade(url, "0019")
        assert [r["column_name"] for r in fetch(url, columns)] == ["origin_request_id", "traceparent"]
        migrations.downgrade(url, "0018")
        assert fetch(url, columns) == []
        migrations.upgrade(url, "0019")
        assert len(fetch(url, columns)) == 2


def test_0020_drops_the_unread_partner_index_of_send_jobs_and_downgrade_brings_it_back(pg_server_url: str) -> None:
    index = "SELECT indexname FROM pg_indexes WHERE indexname = 'idx_exchange_send_jobs_partner'"
    # At 0019 (after the downgrade) the index is there.
    assert_up_down_up(pg_server_url, "0020", "0019", index, applied=0, undone=1)


def test_0021_adds_the_failed_attachments_index_and_drops_it_on_downgrade(pg_server_url: str) -> None:
    index = "SELECT indexname FROM pg_indexes WHERE indexname = 'idx_contact_attachments_failed'"
    assert_up_down_up(pg_server_url, "0021", "0020", index, applied=1, undone=0)


def test_0013_adds_the_history_indexes_and_drops_them_on_downgrade(pg_server_url: str) -> None:
    indexes = (
        "SELECT indexname FROM pg_indexes WHERE indexname IN "
        "('idx_exchange_transactions_created', 'idx_exchange_send_jobs_failed', 'idx_idempotency_responses_failed')"
    )
    assert_up_down_up(pg_server_url, "0013", "0010", indexes, applied=3, undone=0)


def test_0012_indexes_backing_off_outbox_events_and_downgrades_cleanly(pg_server_url: str) -> None:
    indexes = "SELECT indexname FROM pg_indexes WHERE indexname = 'idx_event_outbox_backing_off'"
    assert_up_down_up(pg_server_url, "0012", "0010", indexes, applied=1, undone=0)


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


def test_0011_turns_payloads_into_text_keeps_every_value_and_downgrades(pg_server_url: str) -> None:
    """0011 changes the exchange payloads from JSONB to TEXT (JSON kept as its text, read as
    legacy plaintext until rotated) and drops the title length CHECK that ciphertext cannot meet.
    The downgrade brings both back and loses nothing: ciphertext is kept as a JSON string, which
    upgrading again turns back into the ciphertext."""
    ids = {name: str(uuid.uuid4()) for name in ("partner", "plain", "sealed", "job", "case", "user")}
    sealed = "enc:v2:k1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    payload_types = (
        "SELECT table_name, data_type FROM information_schema.columns "
        "WHERE column_name = 'payload' AND table_name LIKE 'exchange_%' ORDER BY table_name"
    )
    with scratch_database(pg_server_url) as url:
        migrations.upgrade(url, "0010")
        admin_sql(
            url,
            f"""INSERT INTO partners (id, name, base_url, token_url, client_id, client_secret, send_path, records_path)
                VALUES ('{ids["partner"]}', 'p', 'http://127.0.0.1:9', 'http://127.0.0.1:9/t', 'c', 's', '/t', '/r')""",
            f"""INSERT INTO exchange_transactions (id, payload, created_by)
                VALUES ('{ids["plain"]}', '{{"note": "kept", "n": 1}}', '{ids["user"]}')""",
            f"""INSERT INTO exchange_send_jobs (id, transaction_id, partner_id, correlation_id, payload)
                VALUES ('{ids["job"]}', '{ids["plain"]}', '{ids["partner"]}', '{uuid.uuid4()}', '{{"note": "kept"}}')""",
        )
        migrations.upgrade(url, "0011")
        assert [tuple(r) for r in fetch(url, payload_types)] == [
            ("exchange_send_jobs", "text"),
            ("exchange_transactions", "text"),
        ]
        assert fetch(url, "SELECT payload FROM exchange_transactions")[0]["payload"] == '{"n": 1, "note": "kept"}'
        admin_sql(
            url,
            f"INSERT INTO exchange_transactions (id, payload, created_by) "
            f"VALUES ('{ids['sealed']}', '{sealed}', '{ids['user']}')",
            f"INSERT INTO cases (id, title, opened_at, created_by) "
            f"VALUES ('{ids['case']}', '{'x' * 400}', now(), '{ids['user']}')",
        )

        migrations.downgrade(url, "0010")
        assert [r["data_type"] for r in fetch(url, payload_types)] == ["jsonb", "jsonb"]
        rows = {str(r["id"]): r["payload"] for r in fetch(url, "SELECT id, payload::text FROM exchange_transactions")}
        assert rows == {ids["plain"]: '{"n": 1, "note": "kept"}', ids["sealed"]: f'"{sealed}"'}
        checks = "SELECT conname FROM pg_constraint WHERE conrelid = 'cases'::regclass AND contype = 'c'"
        assert [r["conname"] for r in fetch(url, checks)] == ["cases_title_check"]
        with pytest.raises(asyncpg.CheckViolationError):
            admin_sql(
                url,
                f"INSERT INTO cases (id, title, opened_at, created_by) VALUES "
                f"('{uuid.uuid4()}', '{'y' * 400}', now(), '{ids['user']}')",
            )

        migrations.upgrade(url, "0011")
        rows = {str(r["id"]): r["payload"] for r in fetch(url, "SELECT id, payload FROM exchange_transactions")}
        assert rows == {ids["plain"]: '{"n": 1, "note": "kept"}', ids["sealed"]: sealed}
        assert fetch(url, checks) == []
        assert migrations.head_revision() == "0021"


def test_0015_indexes_what_the_purges_read_and_downgrades_cleanly(pg_server_url: str) -> None:
    indexes = (
        "SELECT indexname FROM pg_indexes WHERE indexname IN ('idx_exchange_transactions_retention', "
        "'idx_event_inbox_broadcast_dead', 'idx_event_inbox_broadcast_waiting', 'idx_exchange_transactions_created')"
        " ORDER BY indexname"
    )
    column = (
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_name = 'exchange_transactions' AND column_name = 'retention_from'"
    )
    with scratch_database(pg_server_url) as url:
        migrations.upgrade(url, "0015")
        assert [r["indexname"] for r in fetch(url, indexes)] == [
            "idx_event_inbox_broadcast_dead",
            "idx_event_inbox_broadcast_waiting",
            "idx_exchange_transactions_retention",
        ]
        assert len(fetch(url, column)) == 1
        migrations.downgrade(url, "0014")
        assert [r["indexname"] for r in fetch(url, indexes)] == ["idx_exchange_transactions_created"]
        assert fetch(url, column) == []
        migrations.upgrade(url, "0015")
        assert len(fetch(url, indexes)) == 3


def test_0016_cuts_stored_partner_answers_to_their_first_clause(pg_server_url: str) -> None:
    ids = {name: str(uuid.uuid4()) for name in ("partner", "transaction", "user")}
    errors = {
        'partner answered 422: {"invalid": {"name": "Ann Doe"}}': "partner answered 422",
        "timeout: ReadTimeout: timed out": "timeout",
        "partner answered 503 (server error)": "partner answered 503 (server error)",
        "lease expired: the worker stopped during the dispatch": "lease expired",
    }
    with scratch_database(pg_server_url) as url:
        migrations.upgrade(url, "0015")
        admin_sql(
            url,
            f"""INSERT INTO partners (id, name, base_url, token_url, client_id, client_secret, send_path, records_path)
                VALUES ('{ids["partner"]}', 'p', 'http://127.0.0.1:9', 'http://127.0.0.1:9/t', 'c', 's', '/t', '/r')""",
            f"""INSERT INTO exchange_transactions (id, payload, created_by)
                VALUES ('{ids["transaction"]}', '{{}}', '{ids["user"]}')""",
        )
        transaction, partner = ids["transaction"], ids["partner"]
        for error in [*errors, None]:
            admin_sql(
                url,
                "INSERT INTO exchange_send_jobs (id, transaction_id, partner_id, correlation_id, payload, last_error) "
                f"VALUES (gen_random_uuid(), '{transaction}', '{partner}', gen_random_uuid(), '{{}}', "
                + ("NULL)" if error is None else "'" + error.replace("'", "''") + "')"),
            )
        migrations.upgrade(url, "0016")
        stored = sorted((r["last_error"] or "") for r in fetch(url, "SELECT last_error FROM exchange_send_jobs"))
        assert stored == sorted(["", *errors.values()])
        assert not any("Ann" in error for error in stored)


def test_an_upgrade_waits_for_one_under_way_however_long_it_takes_then_finds_the_work_done(
    pg_server_url: str,
) -> None:
    """Two `craig db upgrade` (or two embedded processes starting) on one fresh database: the
    second waits for the first's advisory lock (held here by the test, as a long revision would
    hold it, past the 10 s lock timeout of a revision's DDL) and then applies what is left."""
    with scratch_database(pg_server_url) as url:

        async def main() -> None:
            holder = await asyncpg.connect(libpq_dsn(url))
            try:
                await holder.execute("SELECT pg_advisory_lock(hashtext('craig migrations'))")
                script = f"from craig.adapters.postgres import migrations; migrations.upgrade({url!r}, 'head')"
                run = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
                waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                while not await holder.fetchval(waiting):
                    assert run.poll() is None, run.communicate()[1]
                    await asyncio.sleep(0.1)
                await asyncio.sleep(11)  # past the lock timeout: the wait for this lock has none
                assert run.poll() is None, run.communicate()[1]
                await holder.execute("SELECT pg_advisory_unlock(hashtext('craig migrations'))")
                _, stderr = await asyncio.to_thread(run.communicate, timeout=120)
                assert run.returncode == 0, stderr
            finally:
                await holder.close()

        asyncio.run(main())
        assert fetch(url, "SELECT version_num FROM alembic_version") == [(migrations.head_revision(),)]


def test_a_revision_waiting_for_a_table_lock_gives_up_after_the_lock_timeout(pg_server_url: str) -> None:
    """A long transaction of the app holds a table the next revision alters: the revision fails
    after the lock timeout, as one error, instead of stalling every statement queued behind it."""
    with scratch_database(pg_server_url) as url:
        migrations.upgrade(url, "0019")

        async def hold_and_upgrade() -> None:
            reader = await asyncpg.connect(url)
            try:
                await reader.execute("BEGIN; SELECT count(*) FROM exchange_send_jobs")
                with pytest.raises(DBAPIError) as refused:
                    await asyncio.to_thread(migrations.upgrade, url, "0020")
                assert "lock timeout" in str(refused.value.orig)
            finally:
                await reader.close()

        asyncio.run(hold_and_upgrade())
        assert fetch(url, "SELECT version_num FROM alembic_version") == [("0019",)]
        migrations.upgrade(url, "head")  # with the reader gone it goes through
