"""Contract of SendJobQueue (the worker's atomic pass), run on memory and PostgreSQL.

The memory adapter composes the unit of work's repositories; PostgreSQL does the same in one
statement. Both must record, stage, claim and reserve exactly alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from craig.domain.constants import PARTNER_RATE_LIMIT_MAX_RPM
from craig.domain.event_catalogue import EXCHANGE_SEND_FAILED, EXCHANGE_SENT
from craig.domain.exchange import (
    AttemptDecision,
    JobStatus,
    PartnerAnswer,
    SendJob,
    decide_after_attempt,
    decide_lease_expired,
)
from craig.ports.errors import DatabaseUnavailable, Unavailable
from craig.ports.exchange import SECRET_UNDECRYPTABLE, JobOutcome, PassResult
from craig.usecases.exchange import outcome_event
from tests.support.backends import Backend
from tests.support.exchange_data import a_partner, add_partner, add_transaction, corrupt_secret

pytestmark = pytest.mark.contract

LEASE = timedelta(seconds=60)
MAX_WAIT = timedelta(seconds=10)
SENT = AttemptDecision(JobStatus.SENT, event_type=EXCHANGE_SENT)


async def jobs_for(
    backend: Backend, count: int, rate_limit_rpm: int | None = PARTNER_RATE_LIMIT_MAX_RPM
) -> list[SendJob]:
    partner = await add_partner(backend, a_partner(rate_limit_rpm=rate_limit_rpm))
    jobs: list[SendJob] = []
    for _ in range(count):
        jobs += (await add_transaction(backend, [partner.id]))[1]
    return jobs


async def run_pass(backend: Backend, outcomes: Sequence[JobOutcome] = (), claim: int = 10) -> PassResult:
    return await backend.send_job_queue.run_pass(outcomes, claim, LEASE, MAX_WAIT)


def outcome(job: SendJob, decision: AttemptDecision = SENT) -> JobOutcome:
    now = datetime.now(UTC)
    event = outcome_event(job, decision, now) if decision.event_type else None
    return JobOutcome(job, decision, event)


async def get(backend: Backend, job: SendJob) -> SendJob:
    uow = backend.uow()
    async with uow:
        found = await uow.send_jobs.get(job.id)
    assert found is not None
    return found


async def staged_events(backend: Backend) -> list[tuple[str, str]]:
    """The events staged since the last call (marked published, so the next call skips them)."""
    async with backend.outbox.claim_batch(100) as batch:
        await batch.mark_published([e.id for e in batch.events])
        return [(e.envelope.type, e.envelope.aggregate_id) for e in batch.events]


async def test_a_pass_claims_due_jobs_oldest_first_with_partner_and_slot(backend: Backend) -> None:
    jobs = await jobs_for(backend, 3)
    result = await run_pass(backend, claim=2)
    assert [c.job.id for c in result.claims] == [j.id for j in jobs[:2]]
    assert result.recorded == frozenset() and result.busy == frozenset()
    for claim in result.claims:
        assert claim.job.status is JobStatus.IN_FLIGHT and claim.job.attempts == 1 and claim.job.lease_token == 1
        assert claim.job.lease_expires_at is not None
        assert claim.partner is not None and claim.partner.id == jobs[0].partner_id
        assert claim.partner.client_secret == "s3cret"  # decrypted
        assert claim.slot is not None and claim.slot.granted
    assert [c.job.id for c in (await run_pass(backend)).claims] == [jobs[2].id]
    assert (await run_pass(backend)).claims == []


async def test_outcomes_are_recorded_with_their_events_in_the_same_pass(backend: Backend) -> None:
    jobs = await jobs_for(backend, 3)
    claims = (await run_pass(backend, claim=2)).claims
    failed = AttemptDecision(JobStatus.FAILED, error="partner answered 400", event_type=EXCHANGE_SEND_FAILED)
    result = await run_pass(backend, [outcome(claims[0].job), outcome(claims[1].job, failed)], claim=5)
    assert result.recorded == {claims[0].job.id, claims[1].job.id}
    assert [c.job.id for c in result.claims] == [jobs[2].id]
    assert (await get(backend, claims[0].job)).status is JobStatus.SENT
    stored = await get(backend, claims[1].job)
    assert stored.status is JobStatus.FAILED and stored.last_error == "partner answered 400"
    assert await staged_events(backend) == [
        ("exchange.sent", str(claims[0].job.id)),
        ("exchange.send_failed", str(claims[1].job.id)),
    ]


async def test_a_pass_with_claim_zero_only_records(backend: Backend) -> None:
    await jobs_for(backend, 2)
    [first] = (await run_pass(backend, claim=1)).claims
    result = await run_pass(backend, [outcome(first.job)], claim=0)
    assert result.recorded == {first.job.id} and result.claims == []
    assert (await get(backend, first.job)).status is JobStatus.SENT


async def test_an_outcome_without_its_lease_is_dropped_with_its_event(backend: Backend) -> None:
    await jobs_for(backend, 1)
    [claim] = (await run_pass(backend, claim=1)).claims
    assert (await run_pass(backend, [outcome(claim.job)], claim=0)).recorded == {claim.job.id}
    assert len(await staged_events(backend)) == 1
    stale = await run_pass(backend, [outcome(claim.job)], claim=0)
    assert stale.recorded == frozenset() and stale.busy == frozenset()
    assert await staged_events(backend) == []


async def test_an_outcome_back_to_pending_is_not_claimed_in_the_same_pass(backend: Backend) -> None:
    jobs = await jobs_for(backend, 1)
    [claim] = (await run_pass(backend, claim=1)).claims
    again_now = decide_lease_expired(claim.job.attempts)  # pending, due at once
    assert again_now.status is JobStatus.PENDING
    result = await run_pass(backend, [outcome(claim.job, again_now)], claim=5)
    assert result.recorded == {jobs[0].id} and result.claims == []
    [reclaimed] = (await run_pass(backend)).claims
    assert reclaimed.job.id == jobs[0].id and reclaimed.job.attempts == 2


async def test_a_retry_is_recorded_with_its_backoff_and_no_event(backend: Backend) -> None:
    await jobs_for(backend, 1)
    [claim] = (await run_pass(backend, claim=1)).claims
    retry = decide_after_attempt(1, PartnerAnswer(503, detail="down"), schedule=(timedelta(seconds=0.4),))
    assert (await run_pass(backend, [outcome(claim.job, retry)])).claims == []
    stored = await get(backend, claim.job)
    assert stored.status is JobStatus.PENDING and stored.last_error == "partner answered 503 (server error)"
    assert await staged_events(backend) == []
    await backend.sleep(0.5)
    assert [c.job.attempts for c in (await run_pass(backend)).claims] == [2]


async def test_slots_are_reserved_per_partner_and_shared_by_every_pass(backend: Backend) -> None:
    # 60 per minute: one slot a second, so 11 start within a 10 s wait, and no more.
    await jobs_for(backend, 8, rate_limit_rpm=60)
    first = (await run_pass(backend, claim=5)).claims
    second = (await run_pass(backend, claim=5)).claims
    slots = [c.slot for c in first + second]
    assert all(s is not None for s in slots)
    granted = [s for s in slots if s is not None and s.granted]
    assert len(granted) == 8
    waits = sorted(s.wait.total_seconds() for s in granted)
    assert waits[0] < 0.5 and all(b - a == pytest.approx(1.0, abs=0.1) for a, b in itertools.pairwise(waits))
    more = await jobs_for(backend, 5, rate_limit_rpm=60)
    third = (await run_pass(backend, claim=5)).claims
    assert {c.job.partner_id for c in third} == {more[0].partner_id}  # another partner, its own limit
    assert all(c.slot is not None and c.slot.granted for c in third)


async def test_concurrent_passes_never_share_a_job_and_record_everything(backend: Backend) -> None:
    jobs = await jobs_for(backend, 60)
    seen: list[object] = []

    async def worker() -> None:
        pending: list[JobOutcome] = []
        while True:
            result = await run_pass(backend, pending, claim=4)
            pending = [o for o in pending if o.job.id in result.busy]
            seen.extend(c.job.id for c in result.claims)
            pending += [outcome(c.job) for c in result.claims]
            if not result.claims and not pending:
                return

    await asyncio.gather(*(worker() for _ in range(6)))
    assert sorted(map(str, seen)) == sorted(str(j.id) for j in jobs)
    for job in jobs:
        assert (await get(backend, job)).status is JobStatus.SENT


async def test_an_outcome_whose_row_is_held_comes_back_busy_not_one_whose_row_is_gone(backend: Backend) -> None:
    if backend.postgres is None:
        pytest.skip("only a database with row locks holds a row")
    await jobs_for(backend, 3)
    held, gone, free = (await run_pass(backend, claim=3)).claims
    async with backend.postgres.transaction() as tx:
        await tx.execute(text("DELETE FROM exchange_send_jobs WHERE id = :id"), {"id": gone.job.id})
    async with backend.postgres.transaction() as holder:
        await holder.execute(text("SELECT 1 FROM exchange_send_jobs WHERE id = :id FOR UPDATE"), {"id": held.job.id})
        result = await asyncio.wait_for(run_pass(backend, [outcome(c.job) for c in (held, gone, free)], claim=0), 5)
    assert result.busy == {held.job.id}
    assert result.recorded == {free.job.id}
    assert await staged_events(backend) == [(EXCHANGE_SENT.name, str(free.job.id))]  # none for the held one
    assert (await run_pass(backend, [outcome(held.job)], claim=0)).recorded == {held.job.id}  # once it is free


async def test_an_idle_worker_is_woken_when_jobs_are_enqueued(backend: Backend) -> None:
    partner = await add_partner(backend, a_partner(rate_limit_rpm=PARTNER_RATE_LIMIT_MAX_RPM))
    assert (await run_pass(backend)).claims == []
    waiting = asyncio.create_task(backend.send_job_queue.wait_for_jobs(timedelta(seconds=60)))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # nothing enqueued: it keeps waiting
    await add_transaction(backend, [partner.id])
    await asyncio.wait_for(waiting, 20)  # woken by the enqueue, long before its 60 s poll
    assert len((await run_pass(backend)).claims) == 1


async def test_an_enqueue_during_a_pass_is_not_missed(backend: Backend) -> None:
    partner = await add_partner(backend, a_partner(rate_limit_rpm=PARTNER_RATE_LIMIT_MAX_RPM))
    assert (await run_pass(backend)).claims == []
    await add_transaction(backend, [partner.id])  # after the pass, before the worker waits
    await asyncio.sleep(0.05)  # let the notification arrive
    await asyncio.wait_for(backend.send_job_queue.wait_for_jobs(timedelta(seconds=60)), 20)


async def test_a_pass_after_the_server_dropped_the_connection_reconnects(backend: Backend) -> None:
    if backend.postgres is None:
        pytest.skip("only a database server drops connections")
    await jobs_for(backend, 2)
    assert len((await run_pass(backend, claim=1)).claims) == 1
    async with backend.postgres.connect() as admin:
        killed = (
            (
                await admin.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database()"
                        " AND application_name = 'craig-send-worker'"
                    )
                )
            )
            .scalars()
            .all()
        )
    assert killed == [True]  # the worker's own connection, idle after its pass
    await asyncio.sleep(0.1)
    claimed = 0
    for _ in range(2):  # the first pass may find the connection dead: one retryable error
        with contextlib.suppress(Unavailable):
            claimed += len((await run_pass(backend, claim=1)).claims)
    assert claimed == 1


async def test_a_partner_whose_secret_cannot_be_decrypted_spoils_only_its_own_claims(backend: Backend) -> None:
    good = await add_partner(backend, a_partner(rate_limit_rpm=PARTNER_RATE_LIMIT_MAX_RPM))
    bad = await add_partner(backend, a_partner(rate_limit_rpm=PARTNER_RATE_LIMIT_MAX_RPM))
    for _ in range(3):
        await add_transaction(backend, [good.id, bad.id])
    await corrupt_secret(backend, bad.id)
    claims = (await run_pass(backend)).claims
    assert len(claims) == 6
    for claim in claims:
        if claim.job.partner_id == good.id:
            assert claim.partner == good and claim.slot is not None and claim.slot.granted
            assert claim.unusable is None
        else:
            assert claim.partner is None and claim.slot is None
            assert claim.unusable is not None and claim.unusable.startswith(f"{SECRET_UNDECRYPTABLE}: ")
            assert "gone" in claim.unusable  # the cipher's own reason: the key id it does not hold


async def test_claims_a_pass_cannot_hand_over_go_back_unsent(backend: Backend) -> None:
    if backend.postgres is None:
        pytest.skip("the memory pass is one transaction: a failure rolls its claims back with it")
    jobs = await jobs_for(backend, 2)  # a partner's first pass makes its rate-limit row on the side

    async def unreachable(*_args: object) -> object:
        raise DatabaseUnavailable("connection lost")

    queue = backend.send_job_queue
    queue._first_reservation = unreachable  # type: ignore[attr-defined]
    assert (await run_pass(backend)).claims == []
    for job in jobs:
        back = await get(backend, job)
        assert back.status is JobStatus.PENDING and back.attempts == 0 and back.lease_expires_at is None
    del queue._first_reservation  # type: ignore[attr-defined]
    assert sorted(c.job.attempts for c in (await run_pass(backend)).claims) == [1, 1]
