"""The send-job worker (seed: ``ExchangeSendWorker``): claim, dispatch, record.

A worker *pass* is ONE short transaction that records the outcomes of finished dispatches
(with their ``exchange.sent`` / ``exchange.send_failed`` events), returns expired leases to
the queue, claims due jobs (``FOR UPDATE SKIP LOCKED``, leased on the database clock) and
reserves their partners' rate-limit slots. Dispatches then run OUTSIDE any transaction, at most
``max_concurrency`` at once; an outcome waits for the next pass, or at most
``OUTCOME_FLUSH_DELAY`` before it is recorded on its own.

A crash anywhere leaves jobs ``in_flight`` until their lease runs out; they are then sent again
with the same ``correlation_id``, which the partner uses to dedupe.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import timedelta

import attrs
import structlog

from craig.domain.exchange import (
    EXCHANGE_SEND_FAILED,
    AttemptDecision,
    JobStatus,
    SendJob,
    TransportFailure,
    decide_after_attempt,
)
from craig.domain.partner_rate_limit import Reservation
from craig.domain.partners import Partner
from craig.ports.clock import Clock
from craig.ports.exchange import Delivery, PartnerGateway
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.events import stage_event, stage_events
from craig.usecases.send_policy import Observer, SendPolicy, outcome_event

log = structlog.get_logger(__name__)

OUTCOME_FLUSH_DELAY = timedelta(milliseconds=10)
RECORD_RETRY_DELAYS = (0.2, 0.5, 1.0, 2.0, 5.0)
Outcome = tuple[SendJob, AttemptDecision]


@attrs.frozen
class Claim:
    job: SendJob
    partner: Partner | None
    slot: Reservation | None = None


class _NoSlot(Exception):
    def __init__(self, wait: timedelta) -> None:
        self.wait = wait


class SendJobWorker:
    """One worker; several (in several processes) may run side by side on one database."""

    def __init__(
        self,
        uow_factory: Callable[[], UnitOfWork],
        gateway: PartnerGateway,
        clock: Clock,
        policy: SendPolicy | None = None,
        observer: Observer | None = None,
    ) -> None:
        self._uow = uow_factory
        self._gateway = gateway
        self._clock = clock
        self.policy = policy or SendPolicy()
        self._observe = observer or (lambda _outcome, _seconds: None)
        self._running: set[asyncio.Task[None]] = set()
        self._slot_freed = asyncio.Event()
        self._outcomes: list[Outcome] = []
        self._flusher: asyncio.Task[None] | None = None
        self._next_recovery = 0.0

    # --- the loop ------------------------------------------------------------------------------
    async def run_once(self) -> bool:
        """One pass; True when it found work (run again at once)."""
        free = self.policy.max_concurrency - len(self._running)
        # Refill in batches: one pass per half-set of free slots, not one per finished job.
        if free <= 0 or (self._running and free < max(1, self.policy.max_concurrency // 2)):
            self._slot_freed.clear()
            try:
                await asyncio.wait_for(self._slot_freed.wait(), self.policy.recover_interval.total_seconds())
            except TimeoutError:
                pass
            return True
        claims = await self.claim(free)
        for claim in claims:
            task = asyncio.create_task(self._dispatch_task(claim), name=f"send-job:{claim.job.id}")
            self._running.add(task)
        return bool(claims)

    async def drain(self) -> None:
        """Run until no job is due and nothing is in flight here (tests, benchmarks)."""
        while True:
            if await self.run_once():
                continue
            if not self._running:
                break
            await asyncio.wait(set(self._running), return_when=asyncio.FIRST_COMPLETED)
        await self.finish()

    async def finish(self, timeout: timedelta = timedelta(seconds=10)) -> None:
        """Let dispatches in flight end (bounded), then record their outcomes, including any a
        background flush has already taken and is still writing."""
        if self._running:
            await asyncio.wait(set(self._running), timeout=timeout.total_seconds())
        flusher = self._flusher
        if flusher is not None and not flusher.done():
            await asyncio.wait({flusher}, timeout=timeout.total_seconds())
        await self._flush()

    # --- the pass: record, recover, claim, reserve -- one transaction ---------------------------
    async def claim(self, limit: int) -> list[Claim]:
        outcomes, self._outcomes = self._outcomes, []
        try:
            uow = self._uow()
            async with uow:
                await self._record(uow, outcomes)
                if time.monotonic() >= self._next_recovery:
                    self._next_recovery = time.monotonic() + self.policy.recover_interval.total_seconds()
                    recovered = await uow.send_jobs.recover_expired(self.policy.max_attempts, self.policy.recover_batch)
                    await self._stage_lease_failures(uow, [j for j in recovered if j.status is JobStatus.FAILED])
                jobs = await uow.send_jobs.claim_due(limit, self.policy.lease)
                partners = await uow.partners.get_many({j.partner_id for j in jobs}) if jobs else {}
                claims = await self._reserve_slots(uow, [Claim(j, partners.get(j.partner_id)) for j in jobs])
                await uow.commit()
        except BaseException:
            self._outcomes[:0] = outcomes  # recorded by a later pass
            raise
        return claims

    async def _stage_lease_failures(self, uow: UnitOfWork, failed: Sequence[SendJob]) -> None:
        for job in failed:
            log.warning("send job failed: lease expired on its last attempt", job_id=str(job.id))
            decision = AttemptDecision(JobStatus.FAILED, error=job.last_error, event_type=EXCHANGE_SEND_FAILED)
            await stage_event(uow, outcome_event(job, decision, self._clock.now()))
            self._observe("failed", 0.0)

    async def _reserve_slots(self, uow: UnitOfWork, claims: list[Claim]) -> list[Claim]:
        """One reservation per partner for all its claimed jobs, partners in id order."""
        by_partner: defaultdict[object, list[Claim]] = defaultdict(list)
        for claim in claims:
            if claim.partner is not None:
                by_partner[claim.partner.id].append(claim)
        slotted = [c for c in claims if c.partner is None]
        for partner_id in sorted(by_partner, key=str):
            group = by_partner[partner_id]
            partner = group[0].partner
            assert partner is not None
            slots = await uow.partner_rate_limits.reserve(
                partner.id, partner.effective_rate_limit_rpm, len(group), self.policy.max_rate_wait
            )
            slotted += [attrs.evolve(claim, slot=slot) for claim, slot in zip(group, slots, strict=True)]
        return slotted

    async def _record(self, uow: UnitOfWork, outcomes: Sequence[Outcome]) -> None:
        if not outcomes:
            return
        decisions = {job.id: decision for job, decision in outcomes}
        updated = await uow.send_jobs.record(outcomes)
        now = self._clock.now()
        events = [outcome_event(job, decisions[job.id], now) for job in updated if decisions[job.id].event_type]
        await stage_events(uow, events)
        if len(updated) < len(outcomes):
            log.warning("send job outcomes dropped: lease lost to another worker", jobs=len(outcomes) - len(updated))

    # --- dispatch (outside any transaction) ------------------------------------------------------
    async def _dispatch_task(self, claim: Claim) -> None:
        started = time.monotonic()
        try:
            outcome = await self.dispatch(claim)
            self._observe(outcome, time.monotonic() - started)
        except Exception as error:  # the lease brings the job back; never kill the worker
            log.error("send job dispatch crashed", job_id=str(claim.job.id), error=repr(error))
            self._observe("lost", time.monotonic() - started)
        finally:
            self._running.discard(asyncio.current_task())
            self._slot_freed.set()

    async def dispatch(self, claim: Claim) -> str:
        """Send one claimed job; returns the outcome's name."""
        job, partner, slot = claim.job, claim.partner, claim.slot
        if partner is None:
            error = "the partner no longer exists"
            self._queue(job, AttemptDecision(JobStatus.FAILED, error=error, event_type=EXCHANGE_SEND_FAILED))
            return "failed"
        if slot is None or not slot.granted:
            await self._defer(job, slot.wait if slot else self.policy.max_rate_wait)
            return "deferred"
        first = [slot]

        async def pace() -> None:
            wait = first.pop().wait if first else await self._extra_slot(partner)
            if wait > timedelta(0):
                await asyncio.sleep(wait.total_seconds())

        try:
            # Finish well inside the lease, so no other worker takes the job over while it is sent.
            async with asyncio.timeout(self.policy.dispatch_deadline.total_seconds()):
                result = await self._gateway.send(partner, Delivery(job.correlation_id, job.payload), pace)
        except TimeoutError:
            result = TransportFailure("timeout", "the dispatch outlived its deadline inside the lease")
        except _NoSlot as no_slot:
            await self._defer(job, no_slot.wait)
            return "deferred"
        decision = decide_after_attempt(job.attempts, result, self.policy.max_attempts, self.policy.backoff)
        self._queue(job, decision)
        return {JobStatus.SENT: "sent", JobStatus.FAILED: "failed"}.get(decision.status, "retry")

    async def _extra_slot(self, partner: Partner) -> timedelta:
        """The retry after a 401 needs a rate-limit slot of its own."""
        uow = self._uow()
        async with uow:
            [slot] = await uow.partner_rate_limits.reserve(
                partner.id, partner.effective_rate_limit_rpm, 1, self.policy.max_rate_wait
            )
            await uow.commit()
        if not slot.granted:
            raise _NoSlot(slot.wait)
        return slot.wait

    async def _defer(self, job: SendJob, wait: timedelta) -> None:
        uow = self._uow()
        async with uow:
            await uow.send_jobs.defer(job, wait)
            await uow.commit()

    # --- outcomes not carried by a pass ----------------------------------------------------------
    def _queue(self, job: SendJob, decision: AttemptDecision) -> None:
        self._outcomes.append((job, decision))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_later(), name="send-job-outcomes")

    async def _flush_later(self) -> None:
        await asyncio.sleep(OUTCOME_FLUSH_DELAY.total_seconds())
        await self._flush()

    async def _flush(self) -> None:
        """Record whatever no pass has taken yet, retrying while the database is away."""
        while self._outcomes:
            batch, self._outcomes = self._outcomes, []
            for delay in (*RECORD_RETRY_DELAYS, None):
                try:
                    uow = self._uow()
                    async with uow:
                        await self._record(uow, batch)
                        await uow.commit()
                    break
                except Exception as error:
                    if delay is None:
                        log.error("send job outcomes dropped; their leases will bring them back", jobs=len(batch))
                        break
                    log.warning("recording send job outcomes failed; retrying", error=str(error), retry_in=delay)
                    await asyncio.sleep(delay)
