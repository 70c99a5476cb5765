"""The send-job worker's concurrency cap, prefetch and dispatch deadline, on the memory adapters
with a gateway that holds every request until the test lets it go."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from typing import Any

import pytest

from craig.adapters.send_job_queue import UnitOfWorkSendJobQueue
from craig.adapters.telemetry import originating
from craig.domain.constants import SEND_WORKER_FINISH_TIMEOUT, WORKER_STOP_TIMEOUT
from craig.domain.exchange import DispatchResult, JobStatus, PartnerAnswer, SendJob
from craig.domain.partners import Partner
from craig.entrypoints.workers.send_job_scheduler import SendJobScheduler
from craig.ports.exchange import Delivery, Pace, PartnerGateway
from craig.usecases.exchange import SendPolicy
from tests.support.backends import Backend, memory_backend
from tests.support.exchange_data import a_partner, add_partner, add_transaction
from tests.support.logs import craig_logging, json_lines


class SendOnlyGateway(PartnerGateway):
    """A gateway these tests only send through."""

    async def get_json(self, partner: Partner, path: str, params: Mapping[str, str], pace: Pace) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


class HeldGateway(SendOnlyGateway):
    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.in_flight = 0
        self.most_at_once = 0
        self.sent: list[str] = []

    async def send(self, partner: Partner, delivery: Delivery, pace: Pace) -> DispatchResult:
        await pace()
        self.in_flight += 1
        self.most_at_once = max(self.most_at_once, self.in_flight)
        try:
            await self.release.wait()
        finally:
            self.in_flight -= 1
        self.sent.append(str(delivery.correlation_id))
        return PartnerAnswer(200)


@pytest.fixture
async def backend() -> AsyncIterator[Backend]:
    async with memory_backend() as harness:
        yield harness


async def make_jobs(backend: Backend, count: int) -> list[SendJob]:
    partner = await add_partner(backend, a_partner(rate_limit_rpm=1_000_000))
    jobs: list[SendJob] = []
    for _ in range(count):
        jobs += (await add_transaction(backend, [partner.id]))[1]
    return jobs


def worker(backend: Backend, gateway: PartnerGateway, **policy: Any) -> SendJobScheduler:
    assert backend.clock is not None
    return SendJobScheduler.build(
        backend.uow, UnitOfWorkSendJobQueue(backend.uow), gateway, backend.clock, SendPolicy(**policy)
    )


async def statuses(backend: Backend, jobs: list[SendJob]) -> list[tuple[JobStatus, int]]:
    uow = backend.uow()
    async with uow:
        found = [await uow.send_jobs.get(j.id) for j in jobs]
    return [(j.status, j.attempts) for j in found if j is not None]


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_dispatches_never_exceed_the_cap_and_prefetched_jobs_wait_claimed(backend: Backend) -> None:
    jobs = await make_jobs(backend, 10)
    gateway = HeldGateway()
    sender = worker(backend, gateway, max_concurrency=3, prefetch=2)
    assert await sender.run_once()
    await settle()
    assert gateway.in_flight == 3
    assert await statuses(backend, jobs[:5]) == [(JobStatus.IN_FLIGHT, 1)] * 5  # 3 sending, 2 ready
    assert await statuses(backend, jobs[5:]) == [(JobStatus.PENDING, 0)] * 5
    gateway.release.set()
    await asyncio.wait_for(sender.drain(), 10)
    assert gateway.most_at_once == 3
    assert sorted(gateway.sent) == sorted(str(j.correlation_id) for j in jobs)
    assert await statuses(backend, jobs) == [(JobStatus.SENT, 1)] * 10


async def test_finish_gives_prefetched_jobs_back_unsent(backend: Backend) -> None:
    jobs = await make_jobs(backend, 5)
    gateway = HeldGateway()
    sender = worker(backend, gateway, max_concurrency=2, prefetch=2)
    await sender.run_once()
    await settle()
    finishing = asyncio.create_task(sender.finish(timeout=timedelta(seconds=5)))
    await settle()
    gateway.release.set()
    await asyncio.wait_for(finishing, 10)
    assert await statuses(backend, jobs) == [(JobStatus.SENT, 1)] * 2 + [(JobStatus.PENDING, 0)] * 3


async def test_a_prefetched_job_that_waited_half_its_deadline_goes_back_unsent(backend: Backend) -> None:
    jobs = await make_jobs(backend, 2)
    gateway = HeldGateway()
    # lease 1 s: the dispatch deadline is 0.9 s, so a job that waited 0.45 s in the ready queue
    # is given back rather than sent with too little of its lease left.
    sender = worker(backend, gateway, max_concurrency=1, prefetch=1, lease=timedelta(seconds=1))
    await sender.run_once()
    await settle()
    await asyncio.sleep(0.6)
    gateway.release.set()
    await asyncio.wait_for(sender.finish(), 10)
    assert await statuses(backend, jobs) == [(JobStatus.SENT, 1), (JobStatus.PENDING, 0)]
    assert gateway.sent == [str(jobs[0].correlation_id)]


async def test_a_send_past_its_deadline_is_abandoned_as_a_timeout_and_retried(backend: Backend) -> None:
    [job] = await make_jobs(backend, 1)
    gateway = HeldGateway()  # never answers
    # lease 1 s: the send is abandoned 0.9 s after the claim, well inside the lease.
    sender = worker(backend, gateway, max_concurrency=1, lease=timedelta(seconds=1))
    await sender.run_once()
    await asyncio.sleep(1.5)
    assert gateway.in_flight == 0  # the partner call was cancelled
    await asyncio.wait_for(sender.finish(), 10)
    uow = backend.uow()
    async with uow:
        stored = await uow.send_jobs.get(job.id)
    assert stored is not None
    assert (stored.status, stored.attempts) == (JobStatus.PENDING, 1)
    assert stored.last_error == "timeout at the partner (the dispatch outlived its deadline inside the lease)"


class HangsOnce(SendOnlyGateway):
    """Never answers the first request (its send is cancelled at its deadline), unless told to
    swallow that cancellation and answer; answers 200 to every later one at once. Remembers which
    task made each request, and how many cancellations that task had pending then."""

    def __init__(self, swallow: bool = False) -> None:
        self.swallow = swallow
        self.sent: list[str] = []
        self.tasks: list[asyncio.Task[Any] | None] = []
        self.cancelling: list[int] = []

    async def send(self, partner: Partner, delivery: Delivery, pace: Pace) -> DispatchResult:
        await pace()
        task = asyncio.current_task()
        assert task is not None
        self.tasks.append(task)
        self.cancelling.append(task.cancelling())
        if len(self.tasks) == 1:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                if not self.swallow:
                    raise
        self.sent.append(str(delivery.correlation_id))
        return PartnerAnswer(200)


async def one_sender_two_jobs(backend: Backend, gateway: HangsOnce) -> list[SendJob]:
    """The first job claimed alone; the second claimed while the first hangs, so that the one
    sender takes it when the first is done. Lease 10 s: the first send is cancelled 9 s after its
    claim (give or take the watchdog's 250 ms); the second, claimed 6 s in, still has more than
    half of its own deadline then, so it is sent rather than given back."""
    [first] = await make_jobs(backend, 1)
    sender = worker(backend, gateway, max_concurrency=1, prefetch=1, lease=timedelta(seconds=10))
    assert await sender.run_once()
    await asyncio.sleep(6)
    [second] = await make_jobs(backend, 1)
    assert await sender.run_once()
    await asyncio.wait_for(sender.drain(), 20)
    return [first, second]


async def test_the_sender_of_a_send_abandoned_at_its_deadline_goes_on_with_the_next_job(backend: Backend) -> None:
    gateway = HangsOnce()
    first, second = await one_sender_two_jobs(backend, gateway)
    assert gateway.sent == [str(second.correlation_id)]
    assert gateway.tasks[0] is gateway.tasks[1]  # the same sender...
    assert gateway.cancelling == [0, 0]  # ...with the watchdog's cancellation undone
    assert await statuses(backend, [first, second]) == [(JobStatus.PENDING, 1), (JobStatus.SENT, 1)]


async def test_a_cancellation_the_dispatch_swallowed_does_not_stick_to_the_sender(backend: Backend) -> None:
    gateway = HangsOnce(swallow=True)
    first, second = await one_sender_two_jobs(backend, gateway)
    assert gateway.sent == [str(first.correlation_id), str(second.correlation_id)]
    assert gateway.tasks[0] is gateway.tasks[1]
    assert gateway.cancelling == [0, 0]


async def test_senders_cancelled_before_they_start_give_their_slots_back(backend: Backend) -> None:
    jobs = await make_jobs(backend, 2)
    gateway = HeldGateway()
    gateway.release.set()
    sender = worker(backend, gateway, max_concurrency=2, prefetch=0)
    assert await sender.run_once()
    senders = [task for task in asyncio.all_tasks() if task.get_name() == "send-job-sender"]
    assert len(senders) == 2
    for task in senders:
        task.cancel()  # before their first step: no code of theirs runs
    await asyncio.wait_for(sender.drain(), 5)
    assert gateway.sent == []
    assert await statuses(backend, jobs) == [(JobStatus.IN_FLIGHT, 1)] * 2  # until their leases run out


async def test_one_sender_binds_each_job_to_its_own_request_only(
    backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    partner = await add_partner(backend, a_partner(rate_limit_rpm=1_000_000))
    with originating("req-first"):
        [first] = (await add_transaction(backend, [partner.id]))[1]
    [second] = (await add_transaction(backend, [partner.id]))[1]
    gateway = HangsOnce()
    gateway.tasks.append(None)  # its first request is answered at once
    with craig_logging():
        await asyncio.wait_for(worker(backend, gateway, max_concurrency=1, prefetch=1).drain(), 10)
    assert gateway.tasks[1] is gateway.tasks[2]  # one sender sent both
    lines = {
        line["job_id"]: line for line in json_lines(capsys.readouterr().err) if line["event"] == "send job dispatched"
    }
    assert lines[str(first.id)]["request_id"] == "req-first"
    assert "request_id" not in lines[str(second.id)]


def test_a_stopping_send_worker_finishes_well_inside_the_loops_stop_timeout() -> None:
    """The loop is cancelled after WORKER_STOP_TIMEOUT: the send worker's whole finish (waiting
    for sends, then for a flush under way) must end before, or the outcomes of sends that
    ended are lost and the jobs sent again after their lease."""
    assert SEND_WORKER_FINISH_TIMEOUT.total_seconds() <= 0.75 * WORKER_STOP_TIMEOUT.total_seconds()
