"""Memory adapters of the partner-exchange ports: the domain transitions over the memory database.

The memory database serializes transactions, so ``FOR UPDATE SKIP LOCKED`` holds trivially:
no other transaction can hold a row while this one runs.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING
from uuid import UUID

import attrs

from craig.adapters.send_job_queue import SEND_JOBS_CHANNEL, JobWake
from craig.domain import exchange as model
from craig.domain import partner_rate_limit as gcra
from craig.domain.exchange import AttemptDecision, JobStatus, SendJob
from craig.domain.exchange_transactions import ExchangeTransaction
from craig.domain.pages import Page, PageRequest
from craig.domain.partner_rate_limit import Reservation
from craig.domain.partners import Partner
from craig.ports.exchange import (
    PartnerRateLimits,
    PartnerRepository,
    SendJobRepository,
    SendJobStats,
    TransactionRepository,
    UnusablePartner,
)

if TYPE_CHECKING:
    from craig.adapters.memory.database import MemoryDatabase
    from craig.adapters.memory.uow import MemoryUnitOfWork

PARTNERS = "partners"
TRANSACTIONS = "exchange_transactions"
JOBS = "exchange_send_jobs"
RATE_LIMITS = "exchange_rate_limits"


class MemoryPartnerRepository(PartnerRepository):
    def __init__(self, uow: MemoryUnitOfWork) -> None:
        self.uow = uow

    def _decrypted(self, stored: Partner) -> Partner:
        return attrs.evolve(stored, client_secret=self.uow.cipher.decrypt(stored.client_secret))

    async def add(self, partner: Partner) -> bool:
        tx = self.uow.tx
        if tx.get(PARTNERS, partner.id) or tx.select(PARTNERS, lambda p: p.name == partner.name):
            return False
        stored = attrs.evolve(partner, client_secret=self.uow.cipher.encrypt(partner.client_secret))
        tx.put(PARTNERS, partner.id, stored)
        return True

    async def get(self, partner_id: UUID) -> Partner | None:
        stored = self.uow.tx.get(PARTNERS, partner_id)
        return self._decrypted(stored) if stored else None

    async def get_many(self, partner_ids: Collection[UUID]) -> dict[UUID, Partner]:
        found = (self.uow.tx.get(PARTNERS, ident) for ident in set(partner_ids))
        return {p.id: self._decrypted(p) for p in found if p is not None}

    async def load_for_sending(self, partner_ids: Collection[UUID]) -> dict[UUID, Partner | UnusablePartner]:
        loaded: dict[UUID, Partner | UnusablePartner] = {}
        for ident in set(partner_ids):
            stored: Partner | None = self.uow.tx.get(PARTNERS, ident)
            if stored is None:
                continue
            try:
                loaded[ident] = self._decrypted(stored)
            except ValueError as error:
                loaded[ident] = UnusablePartner.undecryptable(ident, error)
        return loaded

    async def list(self, page: PageRequest) -> Page[Partner]:
        every = sorted(self.uow.tx.rows(PARTNERS), key=lambda p: (p.name, p.id))
        chosen = every[page.offset : page.offset + page.per_page]
        return Page([self._decrypted(p) for p in chosen], page.page, page.per_page, len(every))


class MemoryTransactionRepository(TransactionRepository):
    def __init__(self, uow: MemoryUnitOfWork) -> None:
        self.uow = uow

    async def add(self, transaction: ExchangeTransaction) -> None:
        self.uow.tx.put(TRANSACTIONS, transaction.id, transaction)

    async def get(self, transaction_id: UUID) -> ExchangeTransaction | None:
        return self.uow.tx.get(TRANSACTIONS, transaction_id)  # type: ignore[no-any-return]

    async def purge_delivered(self, older_than: timedelta, limit: int) -> int:
        tx = self.uow.tx
        cutoff = tx.db.now() - older_than
        jobs: defaultdict[UUID, list[SendJob]] = defaultdict(list)
        for job in tx.rows(JOBS):
            jobs[job.transaction_id].append(job)

        def delivered(transaction: ExchangeTransaction) -> bool:
            group = jobs[transaction.id]
            return bool(group) and all(
                j.status is JobStatus.SENT and j.completed_at is not None and j.completed_at < cutoff for j in group
            )

        old = (t for t in tx.rows(TRANSACTIONS) if t.created_at < cutoff and delivered(t))
        doomed = sorted(old, key=lambda t: (t.created_at, t.id))[:limit]
        for transaction in doomed:
            for job in jobs[transaction.id]:
                tx.delete(JOBS, job.id)
            tx.delete(TRANSACTIONS, transaction.id)
        return sum(len(jobs[t.id]) for t in doomed)


class MemorySendJobRepository(SendJobRepository):
    def __init__(self, uow: MemoryUnitOfWork) -> None:
        self.uow = uow

    async def add_many(self, jobs: Sequence[SendJob]) -> None:
        tx = self.uow.tx
        now = tx.db.now()
        for job in jobs:
            tx.put(JOBS, job.id, attrs.evolve(job, next_attempt_at=now, created_at=now))
        if jobs:
            tx.after_commit(lambda: tx.db.notifier.notify(SEND_JOBS_CHANNEL))

    async def get(self, job_id: UUID) -> SendJob | None:
        return self.uow.tx.get(JOBS, job_id)  # type: ignore[no-any-return]

    async def for_transaction(self, transaction_id: UUID) -> list[SendJob]:
        jobs = self.uow.tx.select(JOBS, lambda j: j.transaction_id == transaction_id)
        return sorted(jobs, key=lambda j: (j.created_at, j.id))

    async def claim_due(self, limit: int, lease: timedelta, exclude: Collection[UUID] = ()) -> list[SendJob]:
        tx = self.uow.tx
        now = tx.db.now()
        skip = set(exclude)
        due = tx.select(JOBS, lambda j: j.status is JobStatus.PENDING and j.next_attempt_at <= now and j.id not in skip)
        chosen = sorted(due, key=lambda j: (j.next_attempt_at, j.id))[:limit]
        claimed = [model.claimed(job, now, lease) for job in chosen]
        for job in claimed:
            tx.put(JOBS, job.id, job)
        return claimed

    async def recover_expired(self, max_attempts: int, limit: int) -> list[SendJob]:
        now = self.uow.tx.db.now()
        expired = self.uow.tx.select(
            JOBS,
            lambda j: j.status is JobStatus.IN_FLIGHT and j.lease_expires_at is not None and j.lease_expires_at <= now,
        )
        chosen = sorted(expired, key=lambda j: (j.lease_expires_at, j.id))[:limit]
        return await self.record([(job, model.decide_lease_expired(job.attempts, max_attempts)) for job in chosen])

    async def record(self, outcomes: Sequence[tuple[SendJob, AttemptDecision]]) -> list[SendJob]:
        tx = self.uow.tx
        now = tx.db.now()
        updated = []
        for claimed, decision in outcomes:
            current: SendJob | None = tx.get(JOBS, claimed.id)
            if current is None or current.lease_token != claimed.lease_token:
                continue
            if current.status not in (JobStatus.IN_FLIGHT, JobStatus.PENDING):
                continue
            # A pending job with the claim's token was recovered but not claimed again: the claim stands.
            in_flight = attrs.evolve(current, status=JobStatus.IN_FLIGHT)
            job = model.decided(in_flight, decision, now)
            tx.put(JOBS, job.id, job)
            updated.append(job)
        return updated

    async def defer(self, job: SendJob, wait: timedelta) -> bool:
        tx = self.uow.tx
        current: SendJob | None = tx.get(JOBS, job.id)
        if current is None or current.lease_token != job.lease_token or current.status is not JobStatus.IN_FLIGHT:
            return False
        tx.put(JOBS, job.id, model.deferred(current, tx.db.now(), wait))
        return True

    async def retry_failed(self, job_id: UUID) -> SendJob | None:
        tx = self.uow.tx
        current: SendJob | None = tx.get(JOBS, job_id)
        if current is None or current.status is not JobStatus.FAILED:
            return None
        job = model.retried(current, tx.db.now())
        tx.put(JOBS, job_id, job)
        return job

    async def stats(self) -> SendJobStats:
        now = self.uow.tx.db.now()
        jobs: list[SendJob] = list(self.uow.tx.rows(JOBS))
        due = [j.next_attempt_at for j in jobs if j.status is JobStatus.PENDING and j.next_attempt_at <= now]
        return SendJobStats(
            by_status=dict(Counter(str(j.status) for j in jobs)), oldest_due_at=min(due, default=None), now=now
        )


class MemoryPartnerRateLimits(PartnerRateLimits):
    """The GCRA state in a memory table, on the memory database's clock."""

    def __init__(self, uow: MemoryUnitOfWork) -> None:
        self.uow = uow

    async def reserve(self, key: UUID, rate_per_minute: int, count: int, max_wait: timedelta) -> list[Reservation]:
        tx = self.uow.tx
        tat, reservations = gcra.reserve(
            tx.get(RATE_LIMITS, key), tx.db.now(), gcra.interval_for(rate_per_minute), count, max_wait
        )
        tx.put(RATE_LIMITS, key, tat)
        return reservations


def memory_job_wake(db: MemoryDatabase) -> JobWake:
    """Wake-ups for the memory send-job queue: jobs committed to this memory database."""
    return JobWake(lambda: db.notifier.subscribe(SEND_JOBS_CHANNEL))
