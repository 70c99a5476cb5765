"""The send-job worker's pass composed from a unit of work's repositories (any adapter set).

This is the reference form of :class:`~craig.ports.exchange.SendJobQueue`: record, stage,
claim, load partners and reserve slots in one transaction, each through its own port. The
memory profile uses it; PostgreSQL does the same in ONE statement
(:mod:`craig.adapters.postgres.send_job_queue`), and the contract suite holds both to it.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Protocol
from uuid import UUID

from craig.domain.exchange import SendJob
from craig.domain.partners import Partner
from craig.ports.exchange import (
    Claim,
    HasPartnerRateLimits,
    HasPartners,
    HasSendJobs,
    JobOutcome,
    PassResult,
    SendJobQueue,
)
from craig.ports.outbox import HasOutbox
from craig.ports.unit_of_work import UnitOfWork

#: NOTIFY channel (and memory notifier channel) of "jobs were enqueued"; see migration 0010.
SEND_JOBS_CHANNEL = "craig_send_jobs"


class JobWake:
    """ "Jobs may have been enqueued": level-triggered, so a notification that arrives during a
    pass is not lost. ``subscribe`` makes the event (None: no notifications, poll only);
    ``live`` says whether notifications currently flow (a lost LISTEN connection: poll)."""

    def __init__(
        self, subscribe: Callable[[], asyncio.Event] | None = None, live: Callable[[], bool] = lambda: True
    ) -> None:
        self._subscribe = subscribe
        self._live = live
        self._event: asyncio.Event | None = None

    def _get(self) -> asyncio.Event | None:
        if self._event is None and self._subscribe is not None:
            self._event = self._subscribe()
        return self._event

    def clear(self) -> None:
        """Called as a claiming pass starts: later notifications wake the next wait."""
        event = self._get()
        if event is not None:
            event.clear()

    async def wait(self, timeout: timedelta) -> bool:
        """True when woken by a notification, False after ``timeout``."""
        event = self._get()
        if event is None or not self._live():
            await asyncio.sleep(timeout.total_seconds())
            return False
        try:
            await asyncio.wait_for(event.wait(), timeout.total_seconds())
        except TimeoutError:
            return False
        return True


def by_partner(jobs: Iterable[SendJob]) -> dict[UUID, list[SendJob]]:
    """Claimed jobs grouped by partner, partners in ascending key order (the lock order)."""
    groups: defaultdict[UUID, list[SendJob]] = defaultdict(list)
    for job in jobs:
        groups[job.partner_id].append(job)
    return {key: groups[key] for key in sorted(groups, key=str)}


class SendPassWork(UnitOfWork, HasSendJobs, HasOutbox, HasPartners, HasPartnerRateLimits, Protocol):
    """What one pass over the send-job queue uses."""


class UnitOfWorkSendJobQueue(SendJobQueue):
    def __init__(self, uow_factory: Callable[[], SendPassWork], wake: JobWake | None = None) -> None:
        self._uow = uow_factory
        self._wake = wake or JobWake()

    async def wait_for_jobs(self, timeout: timedelta) -> bool:
        return await self._wake.wait(timeout)

    async def aclose(self) -> None:
        return None

    async def run_pass(
        self, outcomes: Sequence[JobOutcome], claim: int, lease: timedelta, max_rate_wait: timedelta
    ) -> PassResult:
        if claim > 0:
            self._wake.clear()
        uow = self._uow()
        async with uow:
            recorded: set[UUID] = set()
            if outcomes:
                updated = await uow.send_jobs.record([(o.job, o.decision) for o in outcomes])
                recorded = {job.id for job in updated}
                events = [o.event for o in outcomes if o.event is not None and o.job.id in recorded]
                if events:
                    await uow.outbox.stage_many(events)
            exclude = [o.job.id for o in outcomes]
            jobs = await uow.send_jobs.claim_due(claim, lease, exclude) if claim > 0 else []
            partners = await uow.partners.load_for_sending({j.partner_id for j in jobs}) if jobs else {}
            claims: list[Claim] = []
            for partner_id, group in by_partner(jobs).items():
                partner = partners.get(partner_id)
                if not isinstance(partner, Partner):
                    unusable = partner.reason if partner is not None else None
                    claims += [Claim(job, None, unusable=unusable) for job in group]
                    continue
                slots = await uow.partner_rate_limits.reserve(
                    partner_id, partner.effective_rate_limit_rpm, len(group), max_rate_wait
                )
                claims += [Claim(job, partner, slot) for job, slot in zip(group, slots, strict=True)]
            await uow.commit()
        claims.sort(key=lambda c: (c.job.next_attempt_at, c.job.id))
        return PassResult(frozenset(recorded), claims)
