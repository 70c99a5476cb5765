"""Contract of SendJobRepository (the durable send-job queue), run on memory and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta

import pytest

from craig.adapters.telemetry import originating
from craig.domain.event_catalogue import EXCHANGE_SEND_FAILED, EXCHANGE_SENT
from craig.domain.exchange import (
    LEASE_EXPIRED_ERROR,
    AttemptDecision,
    JobStatus,
    PartnerAnswer,
    SendJob,
    decide_after_attempt,
)
from tests.support.backends import Backend
from tests.support.exchange_data import add_partner, add_transaction

pytestmark = pytest.mark.contract

LEASE = timedelta(seconds=60)
SENT = AttemptDecision(JobStatus.SENT, event_type=EXCHANGE_SENT)


async def jobs_for(backend: Backend, count: int) -> list[SendJob]:
    partner = await add_partner(backend)
    jobs: list[SendJob] = []
    for _ in range(count):
        jobs += (await add_transaction(backend, [partner.id]))[1]
    return jobs


async def claim(backend: Backend, limit: int = 10, lease: timedelta = LEASE) -> list[SendJob]:
    uow = backend.uow()
    async with uow:
        claimed = await uow.send_jobs.claim_due(limit, lease)
        await uow.commit()
    return claimed


async def record(backend: Backend, outcomes: Sequence[tuple[SendJob, AttemptDecision]]) -> list[SendJob]:
    uow = backend.uow()
    async with uow:
        updated = await uow.send_jobs.record(outcomes)
        await uow.commit()
    return updated


async def get(backend: Backend, job: SendJob) -> SendJob:
    uow = backend.uow()
    async with uow:
        found = await uow.send_jobs.get(job.id)
    assert found is not None
    return found


async def test_jobs_round_trip_pending_and_due(backend: Backend) -> None:
    partner = await add_partner(backend)
    transaction, jobs = await add_transaction(backend, [partner.id], {"nested": {"list": [1, 2]}, "n": None})
    uow = backend.uow()
    async with uow:
        stored = await uow.send_jobs.for_transaction(transaction.id)
    assert [j.id for j in stored] == [jobs[0].id]
    job = stored[0]
    assert job.status is JobStatus.PENDING and job.attempts == 0 and job.lease_token == 0
    assert job.payload == {"nested": {"list": [1, 2]}, "n": None}
    assert job.correlation_id == jobs[0].correlation_id
    assert job.lease_expires_at is None and job.completed_at is None


async def test_claim_takes_due_jobs_oldest_first_and_leases_them(backend: Backend) -> None:
    jobs = await jobs_for(backend, 3)
    claimed = await claim(backend, limit=2)
    assert [j.id for j in claimed] == [j.id for j in jobs[:2]]
    for job in claimed:
        assert job.status is JobStatus.IN_FLIGHT and job.attempts == 1 and job.lease_token == 1
        assert job.lease_expires_at is not None and job.lease_expires_at > job.next_attempt_at
    assert [j.id for j in await claim(backend)] == [jobs[2].id]
    assert await claim(backend) == []


async def test_concurrent_claims_never_share_a_job(backend: Backend) -> None:
    await jobs_for(backend, 12)
    batches = await asyncio.gather(*(claim(backend, limit=3) for _ in range(6)))
    ids = [j.id for batch in batches for j in batch]
    assert len(ids) == 12 and len(set(ids)) == 12


async def test_an_outcome_is_recorded_once_and_sent_is_final(backend: Backend) -> None:
    [job] = await jobs_for(backend, 1)
    [claimed] = await claim(backend)
    [sent] = await record(backend, [(claimed, SENT)])
    assert sent.status is JobStatus.SENT and sent.completed_at is not None and sent.lease_expires_at is None
    assert await record(backend, [(claimed, SENT)]) == []
    assert (await get(backend, job)).status is JobStatus.SENT
    assert await claim(backend) == []


async def test_a_retry_waits_for_its_backoff(backend: Backend) -> None:
    await jobs_for(backend, 1)
    [claimed] = await claim(backend)
    decision = decide_after_attempt(1, PartnerAnswer(503, detail="down"), schedule=(timedelta(seconds=0.4),))
    [retrying] = await record(backend, [(claimed, decision)])
    assert retrying.status is JobStatus.PENDING and retrying.attempts == 1
    assert retrying.last_error == "partner answered 503 (server error)" and retrying.completed_at is None
    assert await claim(backend) == []
    await backend.sleep(0.5)
    [again] = await claim(backend)
    assert again.attempts == 2 and again.lease_token == 2


async def test_an_expired_lease_returns_the_job_keeping_its_attempts(backend: Backend) -> None:
    await jobs_for(backend, 1)
    [claimed] = await claim(backend, lease=timedelta(seconds=0.3))
    uow = backend.uow()
    async with uow:
        assert await uow.send_jobs.recover_expired(6, 10) == []
        await uow.commit()
    await backend.sleep(0.4)
    uow = backend.uow()
    async with uow:
        [recovered] = await uow.send_jobs.recover_expired(6, 10)
        await uow.commit()
    assert recovered.status is JobStatus.PENDING and recovered.attempts == 1
    assert recovered.last_error == LEASE_EXPIRED_ERROR and recovered.lease_expires_at is None
    [again] = await claim(backend)
    assert again.attempts == 2
    assert await record(backend, [(claimed, SENT)]) == []  # the old owner's claim is fenced off
    assert (await record(backend, [(again, SENT)]))[0].status is JobStatus.SENT


async def test_the_old_owner_may_still_finish_before_anyone_reclaims(backend: Backend) -> None:
    await jobs_for(backend, 1)
    [claimed] = await claim(backend, lease=timedelta(seconds=0.2))
    await backend.sleep(0.3)
    uow = backend.uow()
    async with uow:
        await uow.send_jobs.recover_expired(6, 10)
        await uow.commit()
    [sent] = await record(backend, [(claimed, SENT)])
    assert sent.status is JobStatus.SENT


async def test_a_lease_expiring_on_the_last_attempt_fails_the_job(backend: Backend) -> None:
    await jobs_for(backend, 1)
    await claim(backend, lease=timedelta(seconds=0.2))
    await backend.sleep(0.3)
    uow = backend.uow()
    async with uow:
        [failed] = await uow.send_jobs.recover_expired(1, 10)
        await uow.commit()
    assert failed.status is JobStatus.FAILED and failed.completed_at is not None


async def test_defer_undoes_the_attempt(backend: Backend) -> None:
    await jobs_for(backend, 1)
    [claimed] = await claim(backend)
    uow = backend.uow()
    async with uow:
        assert await uow.send_jobs.defer(claimed, timedelta(seconds=0.3))
        await uow.commit()
    job = await get(backend, claimed)
    assert job.status is JobStatus.PENDING and job.attempts == 0
    assert await claim(backend) == []
    await backend.sleep(0.4)
    assert [j.attempts for j in await claim(backend)] == [1]


async def test_only_failed_jobs_are_retried_with_a_fresh_budget(backend: Backend) -> None:
    [job] = await jobs_for(backend, 1)
    uow = backend.uow()
    async with uow:
        assert await uow.send_jobs.retry_failed(job.id) is None
    [claimed] = await claim(backend)
    failed = AttemptDecision(JobStatus.FAILED, error="partner answered 400", event_type=EXCHANGE_SEND_FAILED)
    await record(backend, [(claimed, failed)])
    uow = backend.uow()
    async with uow:
        retried = await uow.send_jobs.retry_failed(job.id)
        await uow.commit()
    assert retried is not None and retried.status is JobStatus.PENDING and retried.attempts == 0
    assert retried.completed_at is None and retried.last_error == "partner answered 400"
    assert [j.id for j in await claim(backend)] == [job.id]


async def test_stats_count_by_status_and_age_the_oldest_due_job(backend: Backend) -> None:
    await jobs_for(backend, 3)
    [claimed] = await claim(backend, limit=1)
    await record(backend, [(claimed, SENT)])
    await backend.sleep(0.2)
    uow = backend.uow()
    async with uow:
        stats = await uow.send_jobs.stats()
    assert stats.by_status == {"pending": 2, "sent": 1}
    assert stats.oldest_due_at is not None
    assert stats.now - stats.oldest_due_at >= timedelta(seconds=0.2)
    assert stats.oldest_expired_lease_at is None


async def test_stats_age_the_oldest_in_flight_job_whose_lease_ran_out(backend: Backend) -> None:
    """A worker died holding a job and no worker recovers it: the age an operator alerts on."""
    await jobs_for(backend, 2)
    [stuck] = await claim(backend, limit=1, lease=timedelta(seconds=0.1))
    await claim(backend, limit=1, lease=timedelta(hours=1))  # a live lease: not counted
    await backend.sleep(0.3)
    uow = backend.uow()
    async with uow:
        stats = await uow.send_jobs.stats()
    assert stats.by_status == {"in_flight": 2}
    assert stats.oldest_expired_lease_at == stuck.lease_expires_at
    assert stats.now - stats.oldest_expired_lease_at >= timedelta(seconds=0.2)


async def test_an_operators_retry_fences_off_the_late_outcome_of_an_earlier_attempt(backend: Backend) -> None:
    [job] = await jobs_for(backend, 1)
    [claimed] = await claim(backend, lease=timedelta(seconds=0.2))  # its worker is still sending ...
    await backend.sleep(0.3)
    uow = backend.uow()
    async with uow:
        [failed] = await uow.send_jobs.recover_expired(1, 10)  # ... when the lease ends its last attempt
        await uow.commit()
    assert failed.status is JobStatus.FAILED
    uow = backend.uow()
    async with uow:
        retried = await uow.send_jobs.retry_failed(job.id)
        await uow.commit()
    assert retried is not None
    retry = decide_after_attempt(1, PartnerAnswer(503), schedule=(timedelta(hours=1),))
    assert await record(backend, [(claimed, retry)]) == []  # the old attempt's outcome arrives late
    assert await record(backend, [(claimed, SENT)]) == []
    assert retried.lease_token > claimed.lease_token
    after = await get(backend, job)
    assert after.status is JobStatus.PENDING and after.attempts == 0 and after.lease_token == retried.lease_token
    [again] = await claim(backend)  # still due now (not pushed back an hour), for the new attempt
    assert again.id == job.id and again.attempts == 1
    assert (await record(backend, [(again, SENT)]))[0].status is JobStatus.SENT


async def test_a_job_made_for_a_request_keeps_its_id_and_trace_context(backend: Backend) -> None:
    partner = await add_partner(backend)
    with originating("req-7"):
        _, [made] = await add_transaction(backend, [partner.id])
    _, [outside] = await add_transaction(backend, [partner.id])
    stored, other = await get(backend, made), await get(backend, outside)
    assert stored.origin_request_id == "req-7" and stored.correlation_id == made.correlation_id
    assert other.origin_request_id is None and other.traceparent is None
    [claimed_first, claimed_second] = sorted(await claim(backend), key=lambda j: j.id == outside.id)
    assert claimed_first.origin_request_id == "req-7" and claimed_second.origin_request_id is None


async def test_failed_jobs_are_listed_most_recently_failed_first(backend: Backend) -> None:
    jobs = await jobs_for(backend, 4)
    failed = AttemptDecision(JobStatus.FAILED, error="partner answered 400", event_type=EXCHANGE_SEND_FAILED)
    claimed = {job.id: job for job in await claim(backend)}
    for job in jobs[:3]:  # one at a time: each fails later than the one before
        await record(backend, [(claimed[job.id], failed)])
        await backend.sleep(0.01)
    await record(backend, [(claimed[jobs[3].id], SENT)])
    uow = backend.uow()
    async with uow:
        assert [j.id for j in await uow.send_jobs.failed(10)] == [jobs[2].id, jobs[1].id, jobs[0].id]
        newest = await uow.send_jobs.failed(2)
        retried = await uow.send_jobs.retry_failed(jobs[2].id)
        await uow.commit()
    assert [j.id for j in newest] == [jobs[2].id, jobs[1].id]
    assert newest[0].status is JobStatus.FAILED and newest[0].last_error == "partner answered 400"
    assert retried is not None
    uow = backend.uow()
    async with uow:
        assert [j.id for j in await uow.send_jobs.failed(10)] == [jobs[1].id, jobs[0].id]
