"""What `craig status`, `/metrics` and the cleanup worker cost on real PostgreSQL once history
has piled up.

The tables are filled with a long history (sent jobs over 40 days, stored responses, processed
deliveries, published events, attachments) and a few live rows, then VACUUM ANALYZEd so the
planner knows their sizes. Every statement the status report, the metrics scrape and one
cleanup pass run is captured as it goes to the server and run again with its own parameters
under ``EXPLAIN (ANALYZE, FORMAT JSON)``, in a transaction rolled back: the rows its scans of the
history tables read (not only the kinds of its scans) must stay within the count cap or a purge
batch, far below the history.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from craig.adapters.postgres.database import PostgresDatabase
from craig.domain.constants import PURGE_BATCH_SIZE, STATS_EXACT_COUNT_MAX_ROWS
from craig.entrypoints import metrics
from craig.entrypoints.operations import collect_status, metric_refreshers
from craig.entrypoints.runtime import running
from craig.entrypoints.workers.registry import cleanup_loop
from tests.support import apps
from tests.support.plans import capturing_statements, explain_captured, plan_nodes, rows_examined

pytestmark = pytest.mark.integration

HISTORY = 3 * STATS_EXACT_COUNT_MAX_ROWS
#: The most rows one statement may read from the history tables: a capped count reads up to its
#: cap, a purge its batch and each deleted row's neighbours; the live rows (under 100) come on top.
MOST_ROWS_READ = max(STATS_EXACT_COUNT_MAX_ROWS, 6 * PURGE_BATCH_SIZE) + 100
HISTORY_TABLES = {
    "exchange_send_jobs",
    "exchange_transactions",
    "idempotency_responses",
    "event_inbox",
    "event_outbox",
    "contact_attachments",
    "referrals",
}

FILL = [
    # partner exchange: a long history of sent jobs, and a few failed, due, leased ones
    """INSERT INTO partners (id, name, base_url, token_url, client_id, client_secret, send_path, records_path)
       VALUES ('00000000-0000-0000-0000-000000000001', 'p', 'http://127.0.0.1:9', 'http://127.0.0.1:9/t', 'c',
               'enc:v1:x:AAAA', '/t', '/r')""",
    # Ids in creation order, as the application's UUIDv7 are; transaction n is n * 2 minutes old.
    f"""INSERT INTO exchange_transactions (id, payload, created_by, created_at)
        SELECT lpad(to_hex({HISTORY + 75} - n), 32, '0')::uuid, '{{}}', gen_random_uuid(),
               now() - (n * 2 + 1 || ' minutes')::interval
          FROM generate_series(1, {HISTORY + 75}) n""",
    """INSERT INTO exchange_send_jobs (id, transaction_id, partner_id, correlation_id, payload, status, attempts,
                                       next_attempt_at, completed_at, lease_expires_at)
       SELECT t.id, t.id, '00000000-0000-0000-0000-000000000001', gen_random_uuid(), '{}',
              s.status, 1, now() - interval '1 day', CASE WHEN s.status IN ('sent', 'failed')
              THEN t.created_at + interval '1 minute' END,
              CASE WHEN s.status = 'in_flight' THEN now() + interval '1 minute' END
         FROM (SELECT id, created_at, row_number() OVER (ORDER BY created_at DESC) AS n FROM exchange_transactions) t
         JOIN LATERAL (SELECT CASE WHEN t.n <= 50 THEN 'failed' WHEN t.n <= 70 THEN 'pending'
                                   WHEN t.n <= 75 THEN 'in_flight' ELSE 'sent' END AS status) s ON true
        ORDER BY t.created_at""",
    # idempotency: finished slots within their retention, a few in flight or failed
    f"""INSERT INTO idempotency_responses (cache_key, method, path, body_fingerprint, status_code, headers, status,
                                          started_at, finished_at, slot_id)
        SELECT 'k' || n, 'POST', '/v1/x', 'f', 201, '[]',
               CASE WHEN n <= 10 THEN 'processing' WHEN n <= 30 THEN 'failed' ELSE 'succeeded' END,
               now() - (n || ' seconds')::interval, now(), gen_random_uuid()
          FROM generate_series(1, {HISTORY}) n""",
    # inbox: processed deliveries, a few retrying and dead
    f"""INSERT INTO event_inbox (consumer, event_id, processed_at, failed_at, error_count)
        SELECT 'c', gen_random_uuid(), CASE WHEN n > 20 THEN now() END, CASE WHEN n <= 10 THEN now() END,
               CASE WHEN n <= 20 THEN 1 ELSE 0 END
          FROM generate_series(1, {HISTORY}) n""",
    # outbox: published events, a few pending (one failing)
    f"""INSERT INTO event_outbox (id, envelope, event_type, aggregate_type, aggregate_id, published_at, attempts)
        SELECT gen_random_uuid(), '{{}}', 't', 'a', n::text, CASE WHEN n > 10 THEN now() END,
               CASE WHEN n = 1 THEN 1 ELSE 0 END
          FROM generate_series(1, {HISTORY}) n""",
    # attachments: present blobs, a few pending
    """INSERT INTO cases (id, title, opened_at, created_by)
       VALUES ('00000000-0000-0000-0000-000000000002', 't', now(), gen_random_uuid())""",
    """INSERT INTO contacts (id, case_id, contact_type, occurred_at, summary, created_by, worker_name)
       VALUES ('00000000-0000-0000-0000-000000000003', '00000000-0000-0000-0000-000000000002', 'visit', now(), 's',
               gen_random_uuid(), 'w')""",
    f"""INSERT INTO contact_attachments (id, contact_id, file_name, content_type, file_size, object_key,
                                        uploaded_by, worker_name, object_status)
        SELECT gen_random_uuid(), '00000000-0000-0000-0000-000000000003', 'f', 'text/plain', 1, 'key/' || n,
               gen_random_uuid(), 'w', CASE WHEN n <= 5 THEN 'pending' ELSE 'present' END
          FROM generate_series(1, {HISTORY}) n""",
    # referrals: a long screened history; 4 urgent waiting (2 past their 24 h), 3 unscored
    f"""INSERT INTO referrals (id, reference, reporter_name, child_details, concern, priority, priority_rank,
                               received_at, status, screened_at, screened_by)
        SELECT gen_random_uuid(), 'REF-' || n, 'enc', 'enc', 'enc',
               CASE WHEN n <= 4 THEN 'urgent' WHEN n <= 7 THEN NULL ELSE 'low' END,
               CASE WHEN n <= 4 THEN 0 WHEN n <= 7 THEN 4 ELSE 3 END,
               now() - (CASE WHEN n <= 2 THEN 48 * 60 ELSE n END || ' minutes')::interval,
               CASE WHEN n <= 7 THEN 'new' ELSE 'screened_out' END,
               CASE WHEN n > 7 THEN now() END, CASE WHEN n > 7 THEN gen_random_uuid() END
          FROM generate_series(1, {HISTORY}) n""",
]


async def fill(database: PostgresDatabase) -> None:
    async with database.transaction() as conn:
        for statement in FILL:
            await conn.execute(text(statement))
    async with database.connect() as conn:
        for table in sorted(HISTORY_TABLES):
            await conn.raw.execute(f"VACUUM ANALYZE {table}")  # outside a transaction


async def old_sent_jobs(database: PostgresDatabase) -> int:
    old = "SELECT count(*) FROM exchange_send_jobs WHERE status = 'sent' AND completed_at < now() - interval '30 days'"
    async with database.connect() as conn:
        return int((await conn.execute(text(old))).scalar_one())


async def test_status_metrics_and_cleanup_never_read_a_history_table_whole(pg_url: str, tmp_path: Path) -> None:
    container = apps.make_container(apps.make_settings("postgres", tmp_path, pg_url))
    async with running(container):
        database = container.postgres()
        await fill(database)
        before = await old_sent_jobs(database)
        with capturing_statements() as statements:
            report = await collect_status(container)
            await metrics.render(metric_refreshers(container))
            await cleanup_loop(container).run_once()
        purged = before - await old_sent_jobs(database)
        scans: list[tuple[str, str, str]] = []
        reads: list[tuple[int, str]] = []
        for statement, arguments in statements:
            if statement.lstrip().upper().startswith("EXPLAIN") or not any(t in statement for t in HISTORY_TABLES):
                continue
            plan = await explain_captured(database, statement, arguments)
            sql = " ".join(statement.split())
            reads.append((rows_examined(plan, HISTORY_TABLES), sql))
            for node in plan_nodes(plan):
                if node.get("Relation Name") in HISTORY_TABLES and node["Node Type"] != "ModifyTable":
                    scans.append((node["Relation Name"], node["Node Type"], sql))
    print("\n".join(f"{table:24} {kind:18} {sql[:150]}" for table, kind, sql in scans))
    print("\n".join(f"{rows:8} rows read  {sql[:150]}" for rows, sql in reads))
    assert all("error" not in section for section in report.values()), report
    jobs = report["send jobs"]["jobs by status"]
    assert (jobs["pending"], jobs["in_flight"], jobs["failed"]) == (20, 5, 50)
    assert jobs["sent"] == pytest.approx(HISTORY, rel=0.1)  # above the exact limit: the planner's estimate
    slots = report["idempotency"]["slots by status"]
    assert (slots["processing"], slots["failed"]) == (10, 20)
    assert slots["succeeded"] == pytest.approx(HISTORY, rel=0.1)
    assert report["inbox"]["retrying deliveries"] == 10 and report["inbox"]["failed (dead-lettered) in inbox"] == 10
    assert (report["outbox"]["pending events"], report["outbox"]["failing events (retrying)"]) == (10, 1)
    assert report["attachments"]["contact_attachments: pending"] == 5
    purge = [
        kind
        for table, kind, sql in scans
        if table == "exchange_send_jobs" and "DELETE FROM exchange_transactions" in sql
    ]
    assert purge and set(purge) <= {"Index Scan", "Index Only Scan"}
    assert purged == PURGE_BATCH_SIZE  # one batch: the oldest sent jobs, each its own transaction
    sample = metrics.SHARED_REGISTRY.get_sample_value  # the shared gauges
    assert sample("craig_exchange_send_jobs", {"status": "failed"}) == 50
    assert sample("craig_idempotency_slots", {"status": "failed"}) == 20
    assert sample("craig_outbox_pending") == 10 and sample("craig_attachments_pending") == 5
    assert (report["intake queue"]["unscreened"], report["intake queue"]["overdue"]) == (7, 2)
    assert report["intake queue"]["urgent"].startswith("4 waiting, 2 overdue, oldest 48h")
    assert sample("craig_referrals_unscreened", {"priority": "urgent"}) == 4
    assert sample("craig_referrals_unscreened", {"priority": "unscored"}) == 3
    assert sample("craig_referrals_unscreened", {"priority": "low"}) == 0
    assert sample("craig_referrals_overdue", {"priority": "urgent"}) == 2
    assert sample("craig_referrals_oldest_unscreened_age_seconds", {"priority": "urgent"}) >= 48 * 3600
    assert {table for table, _, _ in scans} == HISTORY_TABLES
    assert [scan for scan in scans if scan[1] == "Seq Scan"] == []
    assert all(kind in ("Index Scan", "Index Only Scan", "Bitmap Heap Scan") for _, kind, _ in scans), scans
    assert [(rows, sql) for rows, sql in reads if rows > MOST_ROWS_READ] == []
    assert max(rows for rows, _ in reads) < HISTORY / 2
