"""The send-job worker's scheduler: claim, dispatch, record, with bounded concurrency.

A worker *pass* is ONE atomic step on the queue (:class:`~craig.ports.exchange.SendJobQueue`):
it records the outcomes of finished dispatches (with their ``exchange.sent`` /
``exchange.send_failed`` events), claims due jobs (``FOR UPDATE SKIP LOCKED``, leased on the
database clock) and reserves their partners' rate-limit slots. Expired leases go back to the
queue in a separate transaction every ``recover_interval`` (:class:`RecoverExpiredSendJobs`).
Each claimed job is dispatched by :class:`DispatchSendJob` OUTSIDE any transaction, at most
``max_concurrency`` at once, with up to ``prefetch`` more jobs claimed and ready so that each
pass takes a whole batch; an outcome waits for the next pass, or at most
``SEND_OUTCOME_FLUSH_DELAY`` before it is recorded on its own. A dispatch still running at its
deadline (inside the lease, counted from the claim) is cancelled and recorded as a timeout.

A crash anywhere leaves jobs ``in_flight`` until their lease runs out; they are then sent again
with the same ``correlation_id``, which the partner uses to dedupe.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections import deque
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, Protocol

import attrs
import structlog

from craig.adapters.telemetry import originating, recording, span
from craig.domain.constants import (
    SEND_BUSY_RETRY_DELAY,
    SEND_DEADLINE_CHECK_INTERVAL,
    SEND_OUTCOME_FLUSH_DELAY,
    SEND_RECORD_RETRY_DELAYS,
    SEND_WORKER_FINISH_TIMEOUT,
)
from craig.domain.exchange import JobStatus
from craig.ports.clock import Clock
from craig.ports.exchange import Claim, JobOutcome, Pace, PartnerGateway, PassResult, SendJobQueue
from craig.usecases.exchange import (
    DispatchSendJob,
    GiveBackSendJobs,
    GiveBackSendJobsWork,
    Observer,
    RecoverExpiredSendJobs,
    RecoverExpiredSendJobsWork,
    ReserveSendSlot,
    ReserveSendSlotWork,
    SendPolicy,
)

log = structlog.get_logger(__name__)


@attrs.frozen
class _Ready:
    claim: Claim
    #: Monotonic, when the claim came back: its rate-limit slot's time counts from here (the slot
    #: was reserved by the pass, so no later than this).
    claimed_at: float
    #: Monotonic, when the pass statement was sent: the lease started on the database after this
    #: (the statement's ``now()``), so the dispatch deadline counts from here. The pass may wait
    #: for locks and the pool before its claims arrive: counted from their arrival, a deadline
    #: could outlive the lease, and another worker take the job over while its POST is open.
    leased_from: float


async def _unpaced() -> None:
    return None


class SchedulerWork(RecoverExpiredSendJobsWork, GiveBackSendJobsWork, ReserveSendSlotWork, Protocol):
    """What the scheduler's use cases use."""


class SendJobScheduler:
    """One worker; several (in several processes) may run side by side on one database."""

    def __init__(
        self,
        queue: SendJobQueue,
        dispatch: DispatchSendJob,
        recover: RecoverExpiredSendJobs,
        give_back: GiveBackSendJobs,
        reserve_slot: ReserveSendSlot,
        policy: SendPolicy | None = None,
        observer: Observer | None = None,
    ) -> None:
        self._queue = queue
        self._dispatch = dispatch
        self._recover = recover
        self._give_back = give_back
        self._reserve_slot = reserve_slot
        self.policy = policy or SendPolicy()
        self._deadline = self.policy.dispatch_deadline.total_seconds()
        self._observe = observer or (lambda _outcome, _seconds: None)
        #: Tasks dispatching claimed jobs, at most ``max_concurrency``: each dispatches one job at
        #: a time, then the next claimed one while there is one, then ends.
        self._senders: set[asyncio.Task[None]] = set()
        #: Dispatches under way, with their deadlines (monotonic), and those the watchdog
        #: cancelled for running past it.
        self._sending: dict[asyncio.Task[Any], float] = {}
        self._expired: set[asyncio.Task[Any]] = set()
        self._watchdog: asyncio.Task[None] | None = None
        #: Claimed, not yet dispatched (at most ``policy.prefetch``), with their claim times.
        self._ready: deque[_Ready] = deque()
        self._slot_freed = asyncio.Event()
        self._outcomes: list[JobOutcome] = []
        self._flusher: asyncio.Task[None] | None = None
        self._waiting_since = 0.0  # monotonic time the oldest unrecorded outcome was queued
        self._next_recovery = 0.0
        #: Monotonic, when the last pass statement was sent (see :attr:`_Ready.leased_from`).
        self._pass_sent_at = 0.0
        #: The logger of the per-job line, bound once a pass rather than once a line (binding the
        #: module's lazy logger builds a new one each time); a pass picks up a new configuration.
        self._job_log: Any = log.bind()

    @classmethod
    def build(
        cls,
        uow_factory: Callable[[], SchedulerWork],
        queue: SendJobQueue,
        gateway: PartnerGateway,
        clock: Clock,
        policy: SendPolicy | None = None,
        observer: Observer | None = None,
    ) -> SendJobScheduler:
        """A scheduler with its use cases made on ``uow_factory``, all under one ``policy``."""
        policy = policy or SendPolicy()
        return cls(
            queue,
            DispatchSendJob(gateway, clock, policy),
            RecoverExpiredSendJobs(uow_factory, clock, policy),
            GiveBackSendJobs(uow_factory),
            ReserveSendSlot(uow_factory, policy),
            policy,
            observer,
        )

    # --- the loop ------------------------------------------------------------------------------
    async def run_once(self) -> bool:
        """One pass; True when it found work (run again at once).

        Claims keep at most ``max_concurrency`` dispatches running and ``prefetch`` more claimed
        and ready, and a pass runs once a whole batch fits: fewer, fuller passes.
        """
        self._start_ready()
        room = self._room()
        if room <= 0 or ((self._senders or self._ready) and room < self.policy.claim_batch):
            self._slot_freed.clear()
            try:
                await asyncio.wait_for(self._slot_freed.wait(), self.policy.recover_interval.total_seconds())
            except TimeoutError:
                pass
            return True
        claims = await self.claim(room)
        claimed_at, leased_from = time.monotonic(), self._pass_sent_at
        if claims and claimed_at - leased_from > self._deadline / 4:
            log.warning(
                "a send-job pass was slow: its jobs have that much less of their lease to be sent in",
                seconds=round(claimed_at - leased_from, 3),
                jobs=len(claims),
            )
        self._ready.extend(_Ready(claim, claimed_at, leased_from) for claim in claims)
        self._start_ready()
        return bool(claims)

    async def wait_for_jobs(self, timeout: timedelta) -> None:
        """Between idle passes: until jobs may have been enqueued (NOTIFY), at most ``timeout``.
        After a notification it lingers ``policy.wake_linger``, so that a burst of enqueues is
        claimed in a few full passes rather than one nearly empty pass per enqueue (and per
        worker: every idle worker hears every NOTIFY)."""
        if await self._queue.wait_for_jobs(timeout) and self.policy.wake_linger > timedelta(0):
            await asyncio.sleep(self.policy.wake_linger.total_seconds())

    def _room(self) -> int:
        """How many more jobs this worker may claim now."""
        return self.policy.max_concurrency + self.policy.prefetch - len(self._senders) - len(self._ready)

    def _start_ready(self) -> None:
        """Claimed jobs beyond what the running senders will take next get senders of their own,
        up to ``max_concurrency`` senders."""
        while self._ready and len(self._senders) < self.policy.max_concurrency:
            task = asyncio.create_task(self._sender(self._ready.popleft()), name="send-job-sender")
            self._senders.add(task)
            task.add_done_callback(self._sender_ended)

    def _sender_ended(self, task: asyncio.Task[None]) -> None:
        """A sender that did not end on its own (cancelled, even before its first step): it no
        longer counts, and the loop is woken. Its job's lease brings the job back."""
        if task in self._senders:
            self._senders.discard(task)
            self._slot_freed.set()

    async def drain(self) -> None:
        """Run until no job is due and nothing is in flight here (tests, benchmarks)."""
        while True:
            if await self.run_once():
                continue
            if not self._senders and not self._ready:
                break
            if self._senders:
                await asyncio.wait(set(self._senders), return_when=asyncio.FIRST_COMPLETED)
        await self.finish()

    async def finish(self, timeout: timedelta = SEND_WORKER_FINISH_TIMEOUT) -> None:
        """Give back claimed jobs not yet dispatched, let dispatches in flight end (bounded), then
        record their outcomes, including any a background flush has already taken and is still
        writing."""
        deadline = time.monotonic() + timeout.total_seconds()  # one budget for all of it
        unsent, self._ready = [r.claim.job for r in self._ready], deque()
        if unsent:
            try:
                await self._give_back(unsent, timedelta(0))
            except Exception as error:  # still record what was sent; leases bring these back
                log.warning("giving back unsent jobs failed", jobs=len(unsent), error=str(error))
        if self._senders:
            await asyncio.wait(set(self._senders), timeout=max(0.0, deadline - time.monotonic()))
        flusher = self._flusher
        if flusher is not None and not flusher.done():
            await asyncio.wait({flusher}, timeout=max(0.0, deadline - time.monotonic()))
        await self._flush()
        if self._watchdog is not None and not self._sending:
            self._watchdog.cancel()

    async def aclose(self) -> None:
        """After :meth:`finish`: release the queue's resources."""
        await self._queue.aclose()

    # --- the pass: record, claim, reserve -- one atomic step ----------------------------------
    async def claim(self, limit: int) -> list[Claim]:
        await self._recover_if_due()
        outcomes, self._outcomes = self._outcomes, []
        self._pass_sent_at = time.monotonic()  # the leases of its claims start after this
        try:
            result = await self._queue.run_pass(outcomes, limit, self.policy.lease, self.policy.max_rate_wait)
        except BaseException:
            self._requeue(outcomes)  # recorded by a later pass
            raise
        self._settle(outcomes, result)
        self._job_log = log.bind()
        return result.claims

    async def _recover_if_due(self) -> None:
        if time.monotonic() < self._next_recovery:
            return
        self._next_recovery = time.monotonic() + self.policy.recover_interval.total_seconds()
        for job in await self._recover():
            if job.status is JobStatus.FAILED:
                self._observe("failed", 0.0)

    def _settle(self, outcomes: Sequence[JobOutcome], result: PassResult) -> None:
        """Outcomes the pass found busy go to the next one; any other not recorded lost its lease."""
        again = [o for o in outcomes if o.job.id in result.busy]
        self._requeue(again)
        lost = len(outcomes) - len(result.recorded) - len(again)
        if lost:
            log.warning("send job outcomes dropped: lease lost to another worker", jobs=lost)

    # --- dispatch (outside any transaction) ------------------------------------------------------
    async def _sender(self, ready: _Ready) -> None:
        """Dispatch ``ready``, then each next claimed job while one is waiting: one task for a run
        of jobs, not a task per job (making, scheduling and tracking a task per job cost about a
        twentieth of a no-op job's client CPU). Between two jobs nothing is awaited, so at every await
        each sender is dispatching exactly one job."""
        sender = asyncio.current_task()
        assert sender is not None
        job: _Ready | None = ready
        while job is not None:
            await self._dispatch_job(job)
            job = self._ready.popleft() if self._ready else None
            if job is None:
                self._senders.discard(sender)  # it ends: no longer counted
            # Wake the loop only when it has something to do: a whole batch fits, or all is idle.
            if not self._senders or self._room() >= self.policy.claim_batch:
                self._slot_freed.set()

    async def _dispatch_job(self, ready: _Ready) -> None:
        started = time.monotonic()
        try:
            outcome = await self.dispatch(ready)
            self._observe(outcome, time.monotonic() - started)
        except Exception as error:  # the lease brings the job back; never kill the worker
            log.error("send job dispatch crashed", job_id=str(ready.claim.job.id), error=repr(error))
            self._observe("lost", time.monotonic() - started)

    async def dispatch(self, ready: _Ready) -> str:
        """Dispatch one claimed job under its deadline, then queue its outcome for recording or
        give it back; returns the outcome's name.

        The dispatch runs bound to the request that made the job (its log lines carry that
        ``request_id``) in a ``send job`` span that continues the job's trace context."""
        job = ready.claim.job
        attributes: dict[str, str | int | float | bool] | None = None
        if recording():  # only a recorded span keeps them
            attributes = {"craig.send_job.id": str(job.id), "craig.send_job.attempt": job.attempts}
        with (
            originating(job.origin_request_id),
            span("send job", parent=job.traceparent, attributes=attributes) as current,
        ):
            name = await self._dispatch_in_time(ready)
            current.set("craig.send_job.outcome", name)
            self._job_log.info("send job dispatched", job_id=str(job.id), attempt=job.attempts, outcome=name)
            return name

    async def _dispatch_in_time(self, ready: _Ready) -> str:
        # Finish well inside the lease, so no other worker takes the job over while it is sent.
        claim = ready.claim
        deadline = ready.leased_from + self._deadline
        now = time.monotonic()
        # Given back unsent (due at once, its attempt undone) when less than half the deadline is
        # left, whether the job waited in the ready queue or a slow pass used it: a send cut
        # short is a timeout, an attempt spent though the partner may have taken the job. So
        # passes that are always slower than half the deadline send nothing (the warning above
        # says so) until they are quick again.
        too_late = deadline - now < self._deadline / 2
        task = asyncio.current_task()
        assert task is not None
        # A sender runs many jobs: the watchdog's cancellation of this one must not outlive it.
        cancelling = task.cancelling()
        self._sending[task] = deadline
        self._watch()
        try:
            dispatched = await self._dispatch(claim, self._pace(claim, ready.claimed_at), too_late=too_late)
        except asyncio.CancelledError:
            if task not in self._expired:
                raise  # cancelled from outside: the sender ends
            self._expired.discard(task)
            if task.uncancel() > cancelling:
                raise  # cancelled from outside as well as by the watchdog: the sender ends
            dispatched = self._dispatch.abandoned(claim)
        finally:
            del self._sending[task]
            if task in self._expired:  # the dispatch swallowed the watchdog's cancellation
                self._expired.discard(task)
                task.uncancel()
        if dispatched.outcome is not None:
            self._add_outcomes([dispatched.outcome], first=False)
        else:
            await self._give_back([claim.job], dispatched.give_back_in or timedelta(0))
        return dispatched.name

    def _pace(self, claim: Claim, claimed_at: float) -> Pace:
        """Before each request: its slot's time. The first request has the claim's slot; each
        later one (the retry after a 401) reserves one of its own."""
        partner, slot = claim.partner, claim.slot
        if partner is None or slot is None:  # never sent
            return _unpaced
        slot_at = [claimed_at + slot.wait.total_seconds()]

        async def pace() -> None:
            at = slot_at.pop() if slot_at else time.monotonic() + (await self._reserve_slot(partner)).total_seconds()
            wait = at - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)

        return pace

    def _watch(self) -> None:
        if self._watchdog is None or self._watchdog.done():
            self._watchdog = asyncio.create_task(
                self._watchdog_loop(), name="send-job-deadlines", context=contextvars.Context()
            )

    async def _watchdog_loop(self) -> None:
        """Cancels sends that outlive their deadline: one timer per worker, not one per job."""
        while self._sending:
            await asyncio.sleep(SEND_DEADLINE_CHECK_INTERVAL.total_seconds())
            now = time.monotonic()
            for task, deadline in list(self._sending.items()):
                if deadline <= now and task not in self._expired:
                    self._expired.add(task)
                    task.cancel()

    # --- outcomes not carried by a pass ----------------------------------------------------------
    def _requeue(self, outcomes: Sequence[JobOutcome]) -> None:
        """Outcomes a pass did not record (it failed, or found their rows busy): first in line."""
        self._add_outcomes(outcomes, first=True)

    def _add_outcomes(self, outcomes: Sequence[JobOutcome], *, first: bool) -> None:
        if not outcomes:
            return
        if not self._outcomes:
            self._waiting_since = time.monotonic()
        if first:
            self._outcomes[:0] = outcomes
        else:
            self._outcomes.extend(outcomes)
        if self._flusher is None or self._flusher.done():
            # A fresh context: the task is started from inside one job's dispatch, whose request id
            # and trace must not stick to the outcomes of every job it flushes later.
            self._flusher = asyncio.create_task(
                self._flush_later(), name="send-job-outcomes", context=contextvars.Context()
            )

    async def _flush_later(self) -> None:
        """Record outcomes no pass has taken within ``SEND_OUTCOME_FLUSH_DELAY`` of the oldest."""
        while self._outcomes:
            due = self._waiting_since + SEND_OUTCOME_FLUSH_DELAY.total_seconds() - time.monotonic()
            if due <= 0:
                await self._flush()
                return
            await asyncio.sleep(due)

    async def _flush(self) -> None:
        """Record whatever no pass has taken yet, retrying while the database is away."""
        while self._outcomes:
            batch, self._outcomes = self._outcomes, []
            for delay in (*SEND_RECORD_RETRY_DELAYS, None):
                try:
                    result = await self._queue.run_pass(batch, 0, self.policy.lease, self.policy.max_rate_wait)
                    self._settle(batch, result)
                    if result.busy and not result.recorded:
                        await asyncio.sleep(SEND_BUSY_RETRY_DELAY.total_seconds())  # rows held elsewhere: no spinning
                    break
                except Exception as error:
                    if delay is None:
                        log.error("send job outcomes dropped; their leases will bring them back", jobs=len(batch))
                        break
                    retry_in = delay.total_seconds()
                    log.warning("recording send job outcomes failed; retrying", error=str(error), retry_in=retry_in)
                    await asyncio.sleep(retry_in)
