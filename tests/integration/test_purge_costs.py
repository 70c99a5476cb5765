"""Retention purges on real PostgreSQL read what their batch needs, not the history they keep.

Each table gets a long history the purge must keep (transactions with a failed job, dead letters
of a durable consumer), older than what it may delete, so a walk in age order meets it first.
Every pass runs under ``EXPLAIN (ANALYZE, FORMAT JSON)`` and the rows its scans read are added
up (``tests/support/plans.py``): they must stay within a small multiple of the batch, however
large the kept history.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import text

from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.exchange import PURGE_DELIVERED
from craig.adapters.postgres.inbox import PURGE_BROADCAST
from tests.support.plans import explain_analyze, rows_examined, scans

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

KEPT = 3000
BATCH = 50
RETENTION = timedelta(days=30)


@pytest.fixture
async def database(pg_url: str) -> AsyncIterator[PostgresDatabase]:
    database = PostgresDatabase(pg_url, pool_size=2)
    try:
        yield database
    finally:
        await database.dispose()


async def run(database: PostgresDatabase, *statements: str) -> None:
    async with database.transaction() as conn:
        for statement in statements:
            await conn.execute(text(statement))
    async with database.connect() as conn:
        await conn.raw.execute("VACUUM ANALYZE")  # outside a transaction


async def count(database: PostgresDatabase, sql: str) -> int:
    async with database.transaction() as conn:
        return int((await conn.execute(text(sql))).scalar_one())


# --- exchange: transactions whose every job was sent, among old transactions kept for a failure ---


def transactions(n: int, status: str, created_days_ago: float, completed_days_ago: float | None) -> str:
    completed = "NULL" if completed_days_ago is None else f"now() - interval '{completed_days_ago} days'"
    return f"""
        WITH t AS (
            INSERT INTO exchange_transactions (id, payload, created_by, created_at)
            SELECT gen_random_uuid(), '{{}}', gen_random_uuid(), now() - interval '{created_days_ago} days'
              FROM generate_series(1, {n})
            RETURNING id
        )
        INSERT INTO exchange_send_jobs (id, transaction_id, partner_id, correlation_id, payload, status, attempts,
                                        next_attempt_at, completed_at)
        SELECT gen_random_uuid(), t.id, '00000000-0000-0000-0000-000000000001', gen_random_uuid(), '{{}}',
               '{status}', 6, now(), {completed}
          FROM t, generate_series(1, 2)"""


async def test_a_delivered_purge_pass_reads_its_batch_not_the_failed_history(database: PostgresDatabase) -> None:
    await run(
        database,
        """INSERT INTO partners (id, name, base_url, token_url, client_id, client_secret, send_path, records_path)
           VALUES ('00000000-0000-0000-0000-000000000001', 'p', 'http://127.0.0.1:9', 'http://127.0.0.1:9/t', 'c',
                   'enc:v1:x:AAAA', '/t', '/r')""",
        transactions(KEPT, "failed", 60, 59),  # the kept history, oldest of all
        transactions(5, "pending", 45, None),  # not finished: kept too
        transactions(3 * BATCH, "sent", 40, 39),  # purgeable
        transactions(20, "sent", 35, 1),  # old, but sent recently (a retry): not yet
        transactions(20, "sent", 1, 1),  # young
    )
    delivered = (
        "SELECT count(*) FROM exchange_transactions WHERE created_at < now() - interval '38 days' "
        "AND created_at > now() - interval '42 days'"
    )
    params = {"age": RETENTION.total_seconds(), "limit": BATCH}
    examined: list[int] = []
    async with database.connect() as conn:  # each statement commits on its own
        for _ in range(KEPT // BATCH + 10):
            plan = await explain_analyze(conn, PURGE_DELIVERED, params)
            examined.append(rows_examined(plan, {"exchange_transactions", "exchange_send_jobs"}))
            assert examined[-1] <= 6 * BATCH, scans(plan, {"exchange_transactions", "exchange_send_jobs"})
            if await count(database, delivered) == 0:
                break
        # Everything purgeable is gone; the kept history was read once, and a pass now reads nothing.
        plan = await explain_analyze(conn, PURGE_DELIVERED, params)
    assert await count(database, delivered) == 0
    assert rows_examined(plan, {"exchange_transactions", "exchange_send_jobs"}) == 0
    assert await count(database, "SELECT count(*) FROM exchange_transactions") == KEPT + 5 + 20 + 20
    assert await count(database, "SELECT count(*) FROM exchange_send_jobs WHERE status = 'failed'") == 2 * KEPT
    # A transaction sent a day ago waits for its last job's completion plus the retention period.
    recheck = "SELECT count(*) FROM exchange_transactions WHERE retention_from < now() - interval '23 hours'"
    assert await count(database, recheck) == 20


# --- inbox: old leftovers of broadcast keys, among old dead letters of a durable consumer --------


def inbox_rows(n: int, consumer: str, *, dead_days_ago: float | None, received_days_ago: float) -> str:
    failed = "NULL" if dead_days_ago is None else f"now() - interval '{dead_days_ago} days'"
    return f"""
        INSERT INTO event_inbox (consumer, event_id, received_at, failed_at, error_count, next_attempt_at)
        SELECT '{consumer}', gen_random_uuid(), now() - interval '{received_days_ago} days', {failed},
               CASE WHEN {failed} IS NULL THEN 0 ELSE 6 END, now()
          FROM generate_series(1, {n})"""


async def test_a_broadcast_purge_pass_reads_its_batch_not_the_durable_dead_letters(
    database: PostgresDatabase,
) -> None:
    await run(
        database,
        inbox_rows(KEPT, "notifications", dead_days_ago=3, received_days_ago=3),  # kept for an operator
        inbox_rows(KEPT, "notifications", dead_days_ago=None, received_days_ago=3),  # a durable backlog
        inbox_rows(2 * BATCH, "rules-cache@gone-instance", dead_days_ago=3, received_days_ago=3),
        inbox_rows(2 * BATCH, "rules-cache@gone-instance", dead_days_ago=None, received_days_ago=3),
        inbox_rows(10, "rules-cache@live-instance", dead_days_ago=None, received_days_ago=0),
        inbox_rows(10, "rules-cacheX@other", dead_days_ago=3, received_days_ago=3),  # another name
    )
    leftovers = "SELECT count(*) FROM event_inbox WHERE consumer = 'rules-cache@gone-instance'"
    params = {"consumers": ["rules-cache"], "age": timedelta(days=1).total_seconds(), "batch": BATCH}
    async with database.connect() as conn:  # each statement commits on its own
        for _ in range(5):
            plan = await explain_analyze(conn, PURGE_BROADCAST, params)
            read = rows_examined(plan, {"event_inbox"})
            assert read <= 4 * BATCH + 10, scans(plan, {"event_inbox"})
            if await count(database, leftovers) == 0:
                break
    assert await count(database, leftovers) == 0
    assert await count(database, "SELECT count(*) FROM event_inbox WHERE consumer = 'notifications'") == 2 * KEPT
    assert await count(database, "SELECT count(*) FROM event_inbox WHERE consumer <> 'rules-cache@gone-instance'") == (
        2 * KEPT + 20
    )
