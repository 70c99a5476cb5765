"""An operator finds and fixes failed attachments, failed send jobs and failing outbox events
without SQL: ``craig attachments failed|discard``, ``craig exchange failed|retry`` and ``craig
outbox failing|retry`` as real processes, on real PostgreSQL (and S3 for the attachments'
objects), each change in the audit trail."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from craig.adapters.clock import SystemClock
from craig.adapters.objectstore.minio import MinioObjectStore
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.domain.attachments import Attachment
from craig.domain.contacts import Contact
from craig.domain.event_catalogue import EXCHANGE_SEND_FAILED, EXCHANGE_SENT
from craig.domain.exchange import AttemptDecision, JobStatus
from craig.ports.outbox import PublishFailure
from craig.usecases.attachments import REGISTERED_TABLES, AttachmentScanner
from tests.contract.test_outbox_store import event
from tests.integration.test_attachment_two_phase import Stack
from tests.integration.test_audit_operator_commands import craig, operator, operator_entries, production
from tests.support.backends import postgres_backend
from tests.support.ciphers import TEST_CIPHER
from tests.support.exchange_data import add_partner, add_transaction
from tests.support.plans import explain_analyze, rows_examined

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def with_s3(env: dict[str, str], s3_server: Any, bucket: str) -> dict[str, str]:
    return {
        **env,
        "CRAIG_OBJECT_STORE__ENDPOINT": s3_server.endpoint,
        "CRAIG_OBJECT_STORE__ACCESS_KEY": s3_server.access_key,
        "CRAIG_OBJECT_STORE__SECRET_KEY": s3_server.secret_key,
        "CRAIG_OBJECT_STORE__BUCKET": bucket,
        "CRAIG_OBJECT_STORE__SECURE": "false",
    }


async def uploaded(stack: Stack, contact: Contact, declared: int, data: bytes) -> Attachment:
    """A pending row declaring ``declared`` bytes, and ``data`` stored as its object."""
    row = await stack.pending(contact, "note.txt", declared)
    await stack.s3.put(row.object_key, data, "text/plain")
    return row


@pytest.mark.s3
async def test_failed_attachments_are_listed_and_discarded_with_their_objects(
    tmp_path: Path, pg_url: str, s3_server: Any, s3_bucket: str
) -> None:
    db = PostgresDatabase(pg_url)
    store = MinioObjectStore(s3_server.endpoint, s3_server.access_key, s3_server.secret_key, s3_bucket, secure=False)
    try:
        stack = Stack(db, store)
        _, contact = await stack.contact()
        odd = await uploaded(stack, contact, 5, b"1234567")  # the stored object is not what was declared
        good = await uploaded(stack, contact, 5, b"12345")
        scanner = AttachmentScanner(
            store, lambda: PostgresUnitOfWork(db, TEST_CIPHER), SystemClock(), timedelta(0), REGISTERED_TABLES
        )
        report = await scanner.run_once()
        assert (report.mismatched, report.present) == (1, 1)
        env = with_s3(production(tmp_path, pg_url), s3_server, s3_bucket)

        listed = craig("attachments", "failed", env=env)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.startswith("1 failed attachments\n") and str(odd.id) in listed.stdout
        assert "declared_size=5" in listed.stdout and odd.object_key in listed.stdout
        assert str(good.id) not in listed.stdout

        unknown = uuid.uuid4()
        discarded = craig(
            "attachments", "discard", "--id", str(odd.id), "--id", str(good.id), "--id", str(unknown), env=env
        )
        # The present attachment is never touched, an unknown id is named: both on stderr, exit 1.
        assert discarded.returncode == 1, discarded.stderr
        assert "not discarded" in discarded.stderr
        assert str(good.id) in discarded.stderr and str(unknown) in discarded.stderr
        assert discarded.stdout.startswith(f"discarded {odd.id}  table=contact_attachments contact={contact.id}")
        assert discarded.stdout.endswith("(object deleted)\n1 discarded\n")

        async with db.transaction() as conn:
            statuses = dict((await conn.execute(text("SELECT id, object_status FROM contact_attachments"))).all())
        assert statuses == {good.id: "present"}
        assert {o.key async for o in store.list("cases/contacts/")} == {good.object_key}
        # In the case's history too: the entry carries the case's id.
        discard_entry = operator("attachment_discard", "attachment", str(odd.id), [str(contact.id)])
        assert await operator_entries(pg_url) == [{**discard_entry, "case_id": contact.case_id}]

        again = craig("attachments", "discard", "--id", str(odd.id), env=env)
        assert again.returncode == 1 and again.stdout == "0 discarded\n", again.stderr
        assert craig("attachments", "failed", env=env).stdout == "0 failed attachments\n"
    finally:
        await db.dispose()


@pytest.mark.s3
async def test_a_discard_with_a_bucket_that_does_not_exist_deletes_nothing_and_makes_no_bucket(
    tmp_path: Path, pg_url: str, s3_server: Any, s3_bucket: str
) -> None:
    db = PostgresDatabase(pg_url)
    store = MinioObjectStore(s3_server.endpoint, s3_server.access_key, s3_server.secret_key, s3_bucket, secure=False)
    try:
        stack = Stack(db, store)
        odd = await uploaded(stack, (await stack.contact())[1], 5, b"1234567")
        scanner = AttachmentScanner(
            store, lambda: PostgresUnitOfWork(db, TEST_CIPHER), SystemClock(), timedelta(0), REGISTERED_TABLES
        )
        assert (await scanner.run_once()).mismatched == 1
        typo = f"{s3_bucket}-typo"
        env = with_s3(production(tmp_path, pg_url), s3_server, typo)

        refused = craig("attachments", "discard", "--id", str(odd.id), env=env)
        assert refused.returncode == 2 and refused.stdout == "", refused.stdout
        [line] = [x for x in refused.stderr.splitlines() if x.startswith("craig: ")]
        assert "the object store cannot be used, so nothing was discarded" in line and typo in line
        assert not s3_server.client().bucket_exists(typo)  # an operator's command never makes one
        async with db.transaction() as conn:
            status = (await conn.execute(text("SELECT object_status FROM contact_attachments"))).all()
        assert status == [("failed",)] and await operator_entries(pg_url) == []
    finally:
        await db.dispose()


async def test_failed_send_jobs_are_listed_and_retried(tmp_path: Path, pg_url: str) -> None:
    async with postgres_backend(pg_url) as backend:
        partners = [await add_partner(backend), await add_partner(backend)]
        _, jobs = await add_transaction(backend, [p.id for p in partners])
        uow = backend.uow()
        async with uow:
            claimed = {job.id: job for job in await uow.send_jobs.claim_due(10, timedelta(minutes=1))}
            failed = AttemptDecision(JobStatus.FAILED, error="partner answered 400", event_type=EXCHANGE_SEND_FAILED)
            sent = AttemptDecision(JobStatus.SENT, event_type=EXCHANGE_SENT)
            await uow.send_jobs.record([(claimed[jobs[0].id], failed), (claimed[jobs[1].id], sent)])
            await uow.commit()
        env = production(tmp_path, pg_url)

        listed = craig("exchange", "failed", env=env)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.startswith("1 failed send jobs\n") and f"{jobs[0].id}  status=failed" in listed.stdout
        assert "last_error: partner answered 400" in listed.stdout and str(jobs[1].id) not in listed.stdout

        retried = craig("exchange", "retry", "--id", str(jobs[0].id), "--id", str(jobs[1].id), env=env)
        # A sent job is never touched: named on stderr, exit 1.
        assert retried.returncode == 1 and f"not retried (no such failed send job): {jobs[1].id}" in retried.stderr
        assert retried.stdout.startswith(f"retried {jobs[0].id}  status=pending")
        assert retried.stdout.endswith("\n1 retried\n")

        uow = backend.uow()
        async with uow:
            now = {job.id: await uow.send_jobs.get(job.id) for job in jobs}
        first, second = now[jobs[0].id], now[jobs[1].id]
        assert first is not None and (first.status, first.attempts) == (JobStatus.PENDING, 0)
        assert second is not None and second.status is JobStatus.SENT
        assert await operator_entries(pg_url) == [operator("job_retry", "send_job", str(jobs[0].id))]
        assert craig("exchange", "failed", env=env).stdout == "0 failed send jobs\n"


async def test_failing_outbox_events_are_listed_and_their_backoff_ended(tmp_path: Path, pg_url: str) -> None:
    """``craig outbox failing|retry`` as processes on real PostgreSQL: an event whose publish
    failed shows with its error and what waits behind it; a retry makes it due at once, recorded
    in the audit trail in the same transaction; an id that is not failing is named (exit 1)."""
    poison, behind, other = event("P", 1), event("P", 2), event("Q", 1)
    async with postgres_backend(pg_url) as backend:
        uow = backend.uow()
        async with uow:
            await uow.outbox.stage_many([poison, behind, other])
            await uow.commit()
        async with backend.outbox.claim_batch(10) as batch:
            first = {r.envelope.id: r.id for r in batch.events}
            await batch.mark_failed(
                [PublishFailure(first[e.id], "broker said no", timedelta(hours=1)) for e in (poison, other)]
            )
        env = production(tmp_path, pg_url)

        listed = craig("outbox", "failing", env=env)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.startswith("2 failing events\n")
        assert f"{poison.id}  tests.happened aggregate=test:P attempts=1 " in listed.stdout
        assert "waiting_behind=1 " in listed.stdout and "last_error: broker said no" in listed.stdout
        assert str(behind.id) not in listed.stdout  # never failed: it waits, it is not failing
        assert craig("outbox", "failing", "--limit", "1", env=env).stdout.startswith("1 of 2 failing events\n")

        unknown = uuid.uuid4()
        retried = craig("outbox", "retry", "--id", str(poison.id), "--id", str(unknown), env=env)
        assert retried.returncode == 1 and "not retried (not a failing event backing off" in retried.stderr
        assert str(unknown) in retried.stderr
        assert retried.stdout.startswith(f"retried {poison.id}  tests.happened") and retried.stdout.endswith(
            "\n1 retried\n"
        )
        async with backend.outbox.claim_batch(10) as batch:
            assert [r.envelope.id for r in batch.events] == [poison.id, behind.id]  # due now, in order
            await batch.mark_published([r.id for r in batch.events])

        nothing = craig("outbox", "retry", "--id", str(unknown), env=env)  # changes nothing, records nothing
        assert nothing.returncode == 1 and nothing.stdout == "0 retried\n"
        assert craig("outbox", "retry", "--all", "--id", str(poison.id), env=env).returncode == 2
        assert craig("outbox", "retry", "--id", str(poison.id), "--limit", "1", env=env).returncode == 2
        every = craig("outbox", "retry", "--all", env=env)
        assert every.returncode == 0 and every.stdout.endswith("\n1 retried\n"), every.stderr
        assert await operator_entries(pg_url) == [
            operator("outbox_retry", "outbox_event", None, [str(poison.id)]),
            operator("outbox_retry", "outbox_event", "all", [str(other.id)]),
        ]


async def test_a_failing_event_that_can_never_go_is_discarded_and_its_aggregate_goes_on(
    tmp_path: Path, pg_url: str
) -> None:
    """``craig outbox discard`` as a process on real PostgreSQL: the event is deleted with its
    audit entry, the one behind it is due, and an id that is not failing is named (exit 1)."""
    poison, behind = event("P", 1), event("P", 2)
    async with postgres_backend(pg_url) as backend:
        uow = backend.uow()
        async with uow:
            await uow.outbox.stage_many([poison, behind])
            await uow.commit()
        async with backend.outbox.claim_batch(10) as batch:
            claimed = {r.envelope.id: r.id for r in batch.events}
            await batch.mark_failed([PublishFailure(claimed[poison.id], "refused for good", timedelta(hours=1))])
        env = production(tmp_path, pg_url)
        unknown = uuid.uuid4()
        discarded = craig("outbox", "discard", "--id", str(poison.id), "--id", str(unknown), env=env)
        assert discarded.returncode == 1 and "not discarded (not a failing event" in discarded.stderr
        assert str(unknown) in discarded.stderr
        assert discarded.stdout.startswith(f"discarded {poison.id}  tests.happened aggregate=test:P attempts=1 ")
        assert "last_error: refused for good" in discarded.stdout and discarded.stdout.endswith("\n1 discarded\n")
        async with backend.outbox.claim_batch(10) as batch:
            assert [r.envelope.id for r in batch.events] == [behind.id]  # its aggregate goes on
        assert craig("outbox", "failing", env=env).stdout == "0 failing events\n"
        # One entry per event deleted, one naming the ids asked for that were not.
        entries = await operator_entries(pg_url)  # one transaction: one time, no order between them
        assert sorted(entries, key=lambda e: str(e["resource_id"])) == sorted(
            [
                operator("outbox_discard", "outbox_event", str(poison.id)),
                operator("outbox_discard", "outbox_event", None, [str(unknown)]),
            ],
            key=lambda e: str(e["resource_id"]),
        )


async def test_a_retry_of_every_failing_event_says_when_some_still_back_off(tmp_path: Path, pg_url: str) -> None:
    """``--all`` stops at ``--limit``: what it left backing off is counted on stderr (exit 1),
    and a run again takes the rest."""
    events = [event(f"A{n}", n) for n in range(3)]
    async with postgres_backend(pg_url) as backend:
        uow = backend.uow()
        async with uow:
            await uow.outbox.stage_many(events)
            await uow.commit()
        async with backend.outbox.claim_batch(10) as batch:
            await batch.mark_failed([PublishFailure(r.id, "nack", timedelta(hours=1)) for r in batch.events])
        env = production(tmp_path, pg_url)
        first = craig("outbox", "retry", "--all", "--limit", "2", env=env)
        assert first.returncode == 1 and first.stdout.endswith("\n2 retried\n"), first.stderr
        assert "craig: 1 failing events still back off" in first.stderr
        second = craig("outbox", "retry", "--all", env=env)
        assert second.returncode == 0 and second.stdout.endswith("\n1 retried\n"), second.stderr


async def test_the_failing_events_are_read_from_their_index_however_long_the_backlog(pg_url: str) -> None:
    """``craig outbox failing|retry`` on 100,000 pending events (and as many published), 20 of them failing:
    each statement reads the failing rows and their keys, never the backlog (with a small limit,
    ordered by ``seq``, the planner would rather walk every pending event and filter)."""
    from craig.adapters.postgres import outbox

    async with postgres_backend(pg_url) as backend:
        database = backend.postgres
        async with database.transaction() as conn:
            await conn.execute(
                text(
                    "INSERT INTO event_outbox (id, envelope, event_type, aggregate_type, aggregate_id) "
                    "SELECT gen_random_uuid(), '{}'::jsonb, 't', 'a', (g % 5000)::text "
                    "FROM generate_series(1, 200000) AS g"
                )
            )
            # History: events published after a failed attempt (an outage), so the planner sees
            # failures as common, as it does on a deployment that has had one.
            await conn.execute(
                text(
                    "UPDATE event_outbox SET published_at = now(), attempts = 1 "
                    "WHERE id IN (SELECT id FROM event_outbox ORDER BY seq LIMIT 100000)"
                )
            )
            await conn.execute(
                text(
                    "UPDATE event_outbox SET attempts = 1, last_error = 'nack', "
                    "next_attempt_at = now() + interval '1 hour' "
                    "WHERE id IN (SELECT id FROM event_outbox ORDER BY seq DESC LIMIT 20)"
                )
            )
            await conn.execute(text("ANALYZE event_outbox"))
        examined = {}
        async with database.transaction() as conn:
            plan = await explain_analyze(conn, outbox._FAILING, {"ids": None, "limit": 5})
            examined["failing"] = rows_examined(plan, ["event_outbox"])
            plan = await explain_analyze(conn, outbox._RETRY_FAILING, {"ids": None, "limit": 5})
            examined["retry"] = rows_examined(plan, ["event_outbox"])
    assert all(rows < 1_000 for rows in examined.values()), examined
