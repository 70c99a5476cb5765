"""The send-job worker on real PostgreSQL against the fake partner on 127.0.0.1.

Backoffs are scaled down (``SendPolicy.backoff``) so retries take milliseconds; the domain tests
pin the default schedule itself. Workers that must not share memory run as real subprocesses.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from craig.adapters.clock import SystemClock
from craig.adapters.partners.http import HttpPartnerGateway
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.send_job_queue import PostgresSendJobQueue
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.domain.exchange import JobStatus, SendJob
from craig.domain.partners import Partner
from craig.entrypoints.workers.send_job_scheduler import SendJobScheduler
from craig.ports.exchange import SECRET_UNDECRYPTABLE
from craig.usecases.exchange import SendPolicy
from tests.support.backends import Backend, memory_backend, postgres_backend
from tests.support.ciphers import TEST_CIPHER
from tests.support.exchange_data import a_partner, add_partner, add_transaction, corrupt_secret
from tests.support.fake_partner import CLIENT_ID, CLIENT_SECRET, FakePartner, serving_partner

pytestmark = pytest.mark.integration

FAST = (timedelta(milliseconds=50),)
ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def worker_on(url: str, **policy: Any) -> AsyncIterator[tuple[SendJobScheduler, Counter[str]]]:
    """A worker with a connection pool, a gateway and a limiter of its own (as a process has)."""
    database = PostgresDatabase(url, pool_size=5, max_overflow=5)
    gateway = HttpPartnerGateway(
        connect_timeout_seconds=2,
        read_timeout_seconds=10,
        max_connections=20,
        token_refresh_lead=policy.pop("token_refresh_lead", timedelta(seconds=30)),
    )
    outcomes: Counter[str] = Counter()
    worker = SendJobScheduler.build(
        lambda: PostgresUnitOfWork(database, TEST_CIPHER),
        PostgresSendJobQueue(database, TEST_CIPHER),
        gateway,
        SystemClock(),
        SendPolicy(**{"backoff": FAST, "recover_interval": timedelta(milliseconds=100), **policy}),
        observer=lambda outcome, _seconds: outcomes.update([outcome]),
    )
    try:
        yield worker, outcomes
    finally:
        await worker.finish()
        await worker.aclose()
        await gateway.aclose()
        await database.dispose()


async def run_until(
    workers: list[SendJobScheduler], done: Callable[[], Awaitable[bool]], timeout: float = 20.0
) -> None:
    async def loop(worker: SendJobScheduler) -> None:
        while True:
            if not await worker.run_once():
                await asyncio.sleep(0.02)

    tasks = [asyncio.create_task(loop(w)) for w in workers]
    try:
        async with asyncio.timeout(timeout):
            while not await done():
                await asyncio.sleep(0.05)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def jobs(backend: Backend, partner: Partner, count: int) -> list[SendJob]:
    made: list[SendJob] = []
    for _ in range(count):
        made += (await add_transaction(backend, [partner.id]))[1]
    return made


async def current(backend: Backend, job_ids: list[Any]) -> list[SendJob]:
    uow = backend.uow()
    async with uow:
        found = [await uow.send_jobs.get(i) for i in job_ids]
    return [j for j in found if j is not None]


def all_final(backend: Backend, job_ids: list[Any]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return all(j.status in (JobStatus.SENT, JobStatus.FAILED) for j in await current(backend, job_ids))

    return check


async def outbox(backend: Backend, kind: str) -> Counter[str]:
    async with backend.outbox.claim_batch(100_000) as batch:
        return Counter(r.envelope.aggregate_id for r in batch.events if r.envelope.type == kind)


@pytest.fixture
async def env(pg_url: str) -> AsyncIterator[tuple[Backend, FakePartner, Partner, str]]:
    async with postgres_backend(pg_url) as backend, serving_partner() as (fake, base):
        partner = await add_partner(
            backend, a_partner(base_url=base, client_id=CLIENT_ID, client_secret=CLIENT_SECRET, rate_limit_rpm=6000)
        )
        yield backend, fake, partner, pg_url


async def test_two_workers_and_a_partner_that_fails_twice_deliver_every_job_once(env: Any) -> None:
    backend, fake, partner, url = env
    fake.fail_each, fake.fail_status = 2, 503
    made = await jobs(backend, partner, 20)
    ids = [j.id for j in made]
    async with worker_on(url) as (one, one_outcomes), worker_on(url) as (two, two_outcomes):
        await run_until([one, two], all_final(backend, ids))
    done = await current(backend, ids)
    assert all(j.status is JobStatus.SENT and j.attempts == 3 and j.last_error is None for j in done)
    correlations = {str(j.correlation_id) for j in made}
    assert fake.delivered == Counter(dict.fromkeys(correlations, 1))  # each delivered exactly once
    assert Counter(r.correlation_id for r in fake.received) == Counter(dict.fromkeys(correlations, 3))
    assert await outbox(backend, "exchange.sent") == Counter({str(i): 1 for i in ids})
    assert one_outcomes["sent"] + two_outcomes["sent"] == 20
    assert one_outcomes["retry"] + two_outcomes["retry"] == 40
    assert one_outcomes.total() > 0 and two_outcomes.total() > 0


async def test_a_longer_retry_after_is_honoured(env: Any) -> None:
    backend, fake, partner, url = env
    fake.throttle_next, fake.retry_after_seconds = 1, 30
    [job] = await jobs(backend, partner, 1)
    async with worker_on(url) as (worker, _):
        await worker.drain()
    [after] = await current(backend, [job.id])
    assert after.status is JobStatus.PENDING and after.attempts == 1
    assert after.last_error is not None and after.last_error.startswith("partner answered 429")
    assert after.next_attempt_at - after.created_at >= timedelta(seconds=29)


async def test_after_max_attempts_the_job_fails_and_says_so_once(env: Any) -> None:
    backend, fake, partner, url = env
    fake.fail_each = 100
    [job] = await jobs(backend, partner, 1)
    async with worker_on(url, max_attempts=3) as (worker, _):
        await run_until([worker], all_final(backend, [job.id]))
    [failed] = await current(backend, [job.id])
    assert failed.status is JobStatus.FAILED and failed.attempts == 3 and failed.completed_at is not None
    assert await outbox(backend, "exchange.send_failed") == Counter({str(job.id): 1})
    assert await outbox(backend, "exchange.sent") == Counter()


@asynccontextmanager
async def worker_process(url: str, *args: str) -> AsyncIterator[subprocess.Popen[str]]:
    """A worker in a real subprocess (its own interpreter, pool and memory); SIGKILLed on exit."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.send_worker_process", url, *args],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("CRAIG_")},
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        assert (await asyncio.to_thread(process.stdout.readline)).strip() == "ready"
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        await asyncio.to_thread(process.wait, 10)


async def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)


async def test_a_slow_hand_over_of_the_claim_leaves_no_post_open_past_the_lease(
    env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lease starts on the database when the pass runs; the claim reaches the worker later
    (the pass waits for locks, its partners are read through the pool). The deadline counts from
    when the pass was sent: counted from the hand-over, a POST could still be open when the lease
    ended, and the job was taken back and POSTed again while the first was open (seen: twice,
    2 s apart, the first outcome dropped as a lease lost). Now the job, with less than half its
    deadline left, is given back unsent and sent by the next pass."""
    backend, fake, partner, url = env
    fake.delay_seconds = 3.0  # inside the deadline (4 s lease: 3.6 s), counted from the hand-over
    [job] = await jobs(backend, partner, 1)
    real_partners_of = PostgresSendJobQueue._partners_of
    slowed: list[bool] = []

    async def slow_once(self: PostgresSendJobQueue, ids: Any) -> Any:
        if ids and not slowed:
            slowed.append(True)
            await asyncio.sleep(2.5)  # a pool wait between the lease's start and the hand-over
        return await real_partners_of(self, ids)

    monkeypatch.setattr(PostgresSendJobQueue, "_partners_of", slow_once)
    async with worker_on(url, lease=timedelta(seconds=4)) as (worker, outcomes):
        await run_until([worker], all_final(backend, [job.id]))
        await asyncio.sleep(2)  # a second POST of the same job would arrive now
    assert slowed and [r.correlation_id for r in fake.received] == [str(job.correlation_id)]
    assert outcomes == {"deferred": 1, "sent": 1}  # given back unsent, then sent once
    [done] = await current(backend, [job.id])
    assert done.status is JobStatus.SENT and done.attempts == 1


async def test_passes_that_are_always_slow_still_send_in_what_is_left_of_the_lease(
    env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every pass is slow (a pool under steady pressure) but leaves half the deadline: the job
    is sent in the time left, not given back unsent pass after pass. (A pass slower than half
    the deadline sends nothing: a send cut short would be a timeout the partner may have
    taken; the worker warns about such passes.) Deadlines count from when the pass was sent,
    not from the lease recovery before it, which a recovery due every pass would also slow."""
    backend, fake, partner, url = env
    [job] = await jobs(backend, partner, 1)
    real_partners_of = PostgresSendJobQueue._partners_of

    async def always_slow(self: PostgresSendJobQueue, ids: Any) -> Any:
        if ids:
            await asyncio.sleep(1.5)  # of a 3.6 s deadline
        return await real_partners_of(self, ids)

    monkeypatch.setattr(PostgresSendJobQueue, "_partners_of", always_slow)
    async with worker_on(url, lease=timedelta(seconds=4)) as (worker, outcomes):
        real_recover = worker._recover

        async def slow_recovery() -> Any:
            await asyncio.sleep(1.5)  # before the pass: no lease has started yet
            return await real_recover()

        monkeypatch.setattr(worker, "_recover", slow_recovery)
        await run_until([worker], all_final(backend, [job.id]))
    assert outcomes == {"sent": 1} and fake.delivered[str(job.correlation_id)] == 1


async def test_a_worker_killed_mid_dispatch_is_taken_over_after_its_lease(env: Any) -> None:
    backend, fake, partner, url = env
    fake.delay_seconds = 30  # the partner holds the first POST open: the worker is mid-dispatch
    [job] = await jobs(backend, partner, 1)
    async with worker_process(url, "--lease", "3") as process:
        await wait_for(lambda: len(fake.received) == 1)
        os.killpg(process.pid, signal.SIGKILL)
        assert process.wait(timeout=10) == -signal.SIGKILL
    [orphan] = await current(backend, [job.id])
    assert orphan.status is JobStatus.IN_FLIGHT and orphan.attempts == 1
    fake.delay_seconds = 0
    async with worker_on(url) as (worker, _):
        await run_until([worker], all_final(backend, [job.id]))
    [done] = await current(backend, [job.id])
    assert done.status is JobStatus.SENT and done.attempts == 2 and done.lease_token == 2
    # Both POSTs carried the same correlation id: the orphaned one, which the partner still
    # completed after the worker died, and the retry. That id is what lets the partner dedupe.
    assert [r.correlation_id for r in fake.received] == [str(job.correlation_id)] * 2
    await wait_for(lambda: fake.delivered[str(job.correlation_id)] == 2)


async def test_tokens_are_refreshed_before_they_expire_and_never_used_after(env: Any) -> None:
    backend, fake, partner, url = env
    # Refreshed at half-life, 1 s before expiry. The last assertion holds only while jobs keep
    # flowing: with a 1 s lifetime (0.5 s of slack) a pause of the test's own loop failed it once
    # in a full suite run, so the slack is 1 s.
    fake.token_lifetime_seconds = 2.0
    made = await jobs(backend, partner, 40)
    ids = [j.id for j in made]
    async with worker_on(url, max_concurrency=2) as (worker, _):
        await run_until([worker], all_final(backend, ids), timeout=30)
        while len(fake.tokens) < 3:  # keep sending until several refreshes happened
            ids += [j.id for j in await jobs(backend, partner, 5)]
            await run_until([worker], all_final(backend, ids), timeout=30)
    assert fake.unauthorized == 0  # never presented an expired token, never needed a 401 retry
    assert fake.tokens_used_after_expiry() == []
    issued = sorted(fake.tokens.values(), key=lambda t: t.issued_at)
    assert all(nxt.issued_at < prev.expires_at for prev, nxt in itertools.pairwise(issued))
    assert all(j.status is JobStatus.SENT for j in await current(backend, ids))


RATE_RPM = 1200  # 20 requests per second
WINDOW_SECONDS = 12.0


async def test_the_rate_limit_holds_across_two_worker_processes(env: Any) -> None:
    backend, fake, partner, url = env
    limited = a_partner(
        base_url=partner.base_url, client_id=CLIENT_ID, client_secret=CLIENT_SECRET, rate_limit_rpm=RATE_RPM
    )
    await add_partner(backend, limited)
    per_second = RATE_RPM / 60
    await jobs(backend, limited, int(per_second * (WINDOW_SECONDS + 4)))
    async with worker_process(url), worker_process(url):
        await wait_for(lambda: bool(fake.arrivals) and fake.arrivals[-1] - fake.arrivals[0] > WINDOW_SECONDS + 1.5)
    arrivals = sorted(fake.arrivals)
    start = arrivals[0] + 1.0  # skip the start-up second
    measured = sum(1 for t in arrivals if start <= t < start + WINDOW_SECONDS)
    expected = per_second * WINDOW_SECONDS
    busiest = max(sum(1 for t in arrivals if s <= t < s + WINDOW_SECONDS) for s in arrivals)
    print(f"rate limit: {measured} requests in {WINDOW_SECONDS:g} s (limit {expected:g}); busiest window {busiest}")
    assert abs(measured - expected) <= 0.05 * expected, (measured, expected)
    assert busiest <= 1.05 * expected, (busiest, expected)


async def test_an_outcome_whose_row_is_held_is_recorded_once_the_row_is_free(env: Any) -> None:
    backend, fake, partner, url = env
    [job] = await jobs(backend, partner, 1)
    passes: list[int] = []
    async with worker_on(url) as (worker, _):
        queue = worker._queue  # count the passes the worker makes while the row is held
        run_pass = queue.run_pass

        async def counted(*args: Any) -> Any:
            passes.append(1)
            return await run_pass(*args)

        queue.run_pass = counted  # type: ignore[method-assign]
        assert backend.postgres is not None
        fake.delay_seconds = 0.3  # the partner answers after the row is held
        async with backend.postgres.transaction() as holder:
            assert await worker.run_once()  # claims the job; the dispatch starts
            await holder.execute(text("SELECT 1 FROM exchange_send_jobs WHERE id = :id FOR UPDATE"), {"id": job.id})
            await wait_for(lambda: fake.delivered[str(job.correlation_id)] == 1)
            await asyncio.sleep(0.05)
            held_from = len(passes)
            await asyncio.sleep(0.5)
            assert [j.status for j in await current(backend, [job.id])] == [JobStatus.IN_FLIGHT]
            assert len(passes) - held_from < 40  # waits between tries instead of spinning
        await run_until([worker], all_final(backend, [job.id]))
    [sent] = await current(backend, [job.id])
    assert sent.status is JobStatus.SENT and sent.attempts == 1
    assert fake.delivered[str(job.correlation_id)] == 1
    assert await outbox(backend, "exchange.sent") == Counter({str(job.id): 1})


@pytest.fixture(params=["memory", "postgres"])
async def any_backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    if request.param == "memory":
        async with memory_backend() as backend:
            yield backend
    else:
        async with postgres_backend(request.getfixturevalue("pg_url")) as backend:
            yield backend


async def test_a_partner_whose_secret_cannot_be_decrypted_fails_only_its_own_jobs_at_once(
    any_backend: Backend,
) -> None:
    backend = any_backend
    async with serving_partner() as (fake, base):
        good, bad = [
            await add_partner(
                backend, a_partner(base_url=base, client_id=CLIENT_ID, client_secret=CLIENT_SECRET, rate_limit_rpm=6000)
            )
            for _ in range(2)
        ]
        made = [job for _ in range(6) for job in (await add_transaction(backend, [good.id, bad.id]))[1]]
        await corrupt_secret(backend, bad.id)
        gateway = HttpPartnerGateway(connect_timeout_seconds=2, read_timeout_seconds=10, max_connections=20)
        worker = SendJobScheduler.build(
            backend.uow,
            backend.send_job_queue,
            gateway,
            backend.clock or SystemClock(),
            SendPolicy(backoff=FAST, max_concurrency=4, prefetch=4),  # the lease stays 60 s
        )
        try:
            # Well inside the 60 s lease: no job may wait for a lease to run out.
            await run_until([worker], all_final(backend, [j.id for j in made]), timeout=20)
        finally:
            await worker.finish()
            await gateway.aclose()
        done = {j.id: j for j in await current(backend, [j.id for j in made])}
        for job in made:
            stored = done[job.id]
            if job.partner_id == good.id:
                assert stored.status is JobStatus.SENT and stored.attempts == 1
            else:  # failed at its first claim, not after six leases ran out
                assert stored.status is JobStatus.FAILED and stored.attempts == 1
                assert stored.last_error is not None and stored.last_error.startswith(f"{SECRET_UNDECRYPTABLE}: ")
        assert fake.delivered == Counter({str(j.correlation_id): 1 for j in made if j.partner_id == good.id})
        bad_jobs = {str(j.id) for j in made if j.partner_id == bad.id}
        assert await outbox(backend, "exchange.send_failed") == Counter(dict.fromkeys(bad_jobs, 1))
