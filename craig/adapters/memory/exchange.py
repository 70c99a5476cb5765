"""Memory adapters of the partner-exchange ports: the domain transitions over the memory database.

The memory database serializes transactions, so ``FOR UPDATE SKIP LOCKED`` holds trivially:
no other transaction can hold a row while this one runs.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from uuid import UUID

import attrs

from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.memory.session import MemorySession
from craig.adapters.sealed_fields import (
    PARTNER_CLIENT_SECRET,
    SEND_JOB_PAYLOAD,
    TRANSACTION_PAYLOAD,
    seal,
    seal_json,
    unseal,
    unseal_json,
)
from craig.adapters.send_job_queue import SEND_JOBS_CHANNEL, JobWake
from craig.adapters.telemetry import job_origin
from craig.domain import exchange as model
from craig.domain import partner_rate_limit as gcra
from craig.domain.exchange import AttemptDecision, JobStatus, SendJob
from craig.domain.exchange_transactions import ExchangeTransaction
from craig.domain.keyset import Keyset, KeysetPage, after, keyset_page
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

PARTNERS = "partners"
TRANSACTIONS = "exchange_transactions"
JOBS = "exchange_send_jobs"
RATE_LIMITS = "exchange_rate_limits"


class MemoryPartnerRepository(PartnerRepository):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    def _decrypted(self, stored: Partner) -> Partner:
        secret = unseal(self.session.cipher, PARTNER_CLIENT_SECRET, stored.id, stored.client_secret)
        return attrs.evolve(stored, client_secret=secret)

    async def add(self, partner: Partner) -> bool:
        tx = await self.session.tx()
        if tx.get(PARTNERS, partner.id) or tx.select(PARTNERS, lambda p: p.name == partner.name):
            return False
        secret = seal(self.session.cipher, PARTNER_CLIENT_SECRET, partner.id, partner.client_secret)
        stored = attrs.evolve(partner, client_secret=secret)
        tx.put(PARTNERS, partner.id, stored)
        return True

    async def get(self, partner_id: UUID) -> Partner | None:
        stored = (await self.session.tx()).get(PARTNERS, partner_id)
        return self._decrypted(stored) if stored else None

    async def get_many(self, partner_ids: Collection[UUID]) -> dict[UUID, Partner]:
        tx = await self.session.tx()
        found = (tx.get(PARTNERS, ident) for ident in set(partner_ids))
        return {p.id: self._decrypted(p) for p in found if p is not None}

    async def load_for_sending(self, partner_ids: Collection[UUID]) -> dict[UUID, Partner | UnusablePartner]:
        loaded: dict[UUID, Partner | UnusablePartner] = {}
        for ident in set(partner_ids):
            stored: Partner | None = (await self.session.tx()).get(PARTNERS, ident)
            if stored is None:
                continue
            try:
                loaded[ident] = self._decrypted(stored)
            except ValueError as error:
                loaded[ident] = UnusablePartner.undecryptable(ident, error)
        return loaded

    async def list_page(self, keyset: Keyset) -> KeysetPage[Partner]:
        every = sorted(
            (p for p in (await self.session.tx()).rows(PARTNERS) if after((p.name, p.id), keyset, (False, False))),
            key=lambda p: (p.name, p.id),
        )
        chosen = [self._decrypted(p) for p in every[: keyset.limit + 1]]
        return keyset_page(chosen, keyset, lambda partner: (partner.name, partner.id))

    async def list(self, page: PageRequest) -> Page[Partner]:
        every = sorted((await self.session.tx()).rows(PARTNERS), key=lambda p: (p.name, p.id))
        chosen = every[page.offset : page.offset + page.per_page]
        return Page([self._decrypted(p) for p in chosen], page.page, page.per_page, len(every))


@attrs.frozen(kw_only=True)
class TransactionRow:
    """A stored transaction: ``payload`` is ciphertext (``TRANSACTION_PAYLOAD``)."""

    id: UUID
    payload: str
    created_by: UUID
    created_at: datetime


class MemoryTransactionRepository(TransactionRepository):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    async def add(self, transaction: ExchangeTransaction) -> None:
        payload = seal_json(self.session.cipher, TRANSACTION_PAYLOAD, transaction.id, transaction.payload)
        row = TransactionRow(
            id=transaction.id, payload=payload, created_by=transaction.created_by, created_at=transaction.created_at
        )
        (await self.session.tx()).put(TRANSACTIONS, transaction.id, row)

    async def get(self, transaction_id: UUID) -> ExchangeTransaction | None:
        row: TransactionRow | None = (await self.session.tx()).get(TRANSACTIONS, transaction_id)
        if row is None:
            return None
        payload = unseal_json(self.session.cipher, TRANSACTION_PAYLOAD, row.id, row.payload)
        return ExchangeTransaction(id=row.id, payload=payload, created_by=row.created_by, created_at=row.created_at)

    async def purge_delivered(self, older_than: timedelta, limit: int) -> int:
        tx = await self.session.tx()
        cutoff = tx.db.now() - older_than
        jobs: defaultdict[UUID, list[SendJob]] = defaultdict(list)
        for row in tx.rows(JOBS):
            jobs[row.job.transaction_id].append(row.job)

        def delivered(transaction: TransactionRow) -> bool:
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


@attrs.frozen
class JobRow:
    """A stored send job: ``payload`` is ciphertext (``SEND_JOB_PAYLOAD``), ``job`` the rest of
    the row (its own payload left empty)."""

    job: SendJob
    payload: str

    @property
    def id(self) -> UUID:
        return self.job.id


class MemorySendJobRepository(SendJobRepository):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    def _job(self, row: JobRow) -> SendJob:
        return attrs.evolve(row.job, payload=unseal_json(self.session.cipher, SEND_JOB_PAYLOAD, row.id, row.payload))

    async def _rows(self, where: Callable[[SendJob], bool]) -> list[JobRow]:
        return (await self.session.tx()).select(JOBS, lambda row: where(row.job))

    async def _put(self, row: JobRow, job: SendJob) -> SendJob:
        """Store ``job``'s state in ``row`` (the payload as stored) and return it, decrypted."""
        stored = JobRow(attrs.evolve(job, payload={}), row.payload)
        (await self.session.tx()).put(JOBS, job.id, stored)
        return self._job(stored)

    async def add_many(self, jobs: Sequence[SendJob]) -> None:
        tx = await self.session.tx()
        now = tx.db.now()
        for job in jobs:
            payload = seal_json(self.session.cipher, SEND_JOB_PAYLOAD, job.id, job.payload)
            stored = attrs.evolve(job_origin(job), payload={}, next_attempt_at=now, created_at=now)
            tx.put(JOBS, job.id, JobRow(stored, payload))
        if jobs:
            tx.after_commit(lambda: tx.db.notifier.notify(SEND_JOBS_CHANNEL))

    async def get(self, job_id: UUID) -> SendJob | None:
        row: JobRow | None = (await self.session.tx()).get(JOBS, job_id)
        return self._job(row) if row is not None else None

    async def for_transaction(self, transaction_id: UUID) -> list[SendJob]:
        rows = await self._rows(lambda j: j.transaction_id == transaction_id)
        return [self._job(row) for row in sorted(rows, key=lambda r: (r.job.created_at, r.id))]

    async def claim_due(self, limit: int, lease: timedelta, exclude: Collection[UUID] = ()) -> list[SendJob]:
        now = (await self.session.tx()).db.now()
        skip = set(exclude)
        due = await self._rows(
            lambda j: j.status is JobStatus.PENDING and j.next_attempt_at <= now and j.id not in skip
        )
        chosen = sorted(due, key=lambda r: (r.job.next_attempt_at, r.id))[:limit]
        return [await self._put(row, model.claimed(row.job, now, lease)) for row in chosen]

    async def recover_expired(self, max_attempts: int, limit: int) -> list[SendJob]:
        now = (await self.session.tx()).db.now()
        expired = await self._rows(
            lambda j: j.status is JobStatus.IN_FLIGHT and j.lease_expires_at is not None and j.lease_expires_at <= now,
        )
        chosen = [r.job for r in sorted(expired, key=lambda r: (r.job.lease_expires_at, r.id))[:limit]]
        return await self.record([(job, model.decide_lease_expired(job.attempts, max_attempts)) for job in chosen])

    async def record(self, outcomes: Sequence[tuple[SendJob, AttemptDecision]]) -> list[SendJob]:
        tx = await self.session.tx()
        now = tx.db.now()
        updated = []
        for claimed, decision in outcomes:
            row: JobRow | None = tx.get(JOBS, claimed.id)
            if row is None or row.job.lease_token != claimed.lease_token:
                continue
            if row.job.status not in (JobStatus.IN_FLIGHT, JobStatus.PENDING):
                continue
            # A pending job with the claim's token was recovered but not claimed again: the claim stands.
            in_flight = attrs.evolve(row.job, status=JobStatus.IN_FLIGHT)
            updated.append(await self._put(row, model.decided(in_flight, decision, now)))
        return updated

    async def defer(self, job: SendJob, wait: timedelta) -> bool:
        tx = await self.session.tx()
        row: JobRow | None = tx.get(JOBS, job.id)
        if row is None or row.job.lease_token != job.lease_token or row.job.status is not JobStatus.IN_FLIGHT:
            return False
        await self._put(row, model.deferred(row.job, tx.db.now(), wait))
        return True

    async def retry_failed(self, job_id: UUID) -> SendJob | None:
        tx = await self.session.tx()
        row: JobRow | None = tx.get(JOBS, job_id)
        if row is None or row.job.status is not JobStatus.FAILED:
            return None
        return await self._put(row, model.retried(row.job, tx.db.now()))

    async def failed(self, limit: int) -> list[SendJob]:
        failed = [row.job for row in (await self.session.tx()).rows(JOBS) if row.job.status is JobStatus.FAILED]
        failed.sort(key=lambda j: (j.completed_at or j.created_at, j.id), reverse=True)
        return failed[:limit]

    async def stats(self) -> SendJobStats:
        now = (await self.session.tx()).db.now()
        jobs = [row.job for row in (await self.session.tx()).rows(JOBS)]
        due = [j.next_attempt_at for j in jobs if j.status is JobStatus.PENDING and j.next_attempt_at <= now]
        expired = [
            j.lease_expires_at
            for j in jobs
            if j.status is JobStatus.IN_FLIGHT and j.lease_expires_at is not None and j.lease_expires_at <= now
        ]
        return SendJobStats(
            by_status=dict(Counter(str(j.status) for j in jobs)),
            oldest_due_at=min(due, default=None),
            now=now,
            oldest_expired_lease_at=min(expired, default=None),
        )


class MemoryPartnerRateLimits(PartnerRateLimits):
    """The GCRA state in a memory table, on the memory database's clock."""

    def __init__(self, session: MemorySession) -> None:
        self.session = session

    async def reserve(self, key: UUID, rate_per_minute: int, count: int, max_wait: timedelta) -> list[Reservation]:
        tx = await self.session.tx()
        tat, reservations = gcra.reserve(
            tx.get(RATE_LIMITS, key), tx.db.now(), gcra.interval_for(rate_per_minute), count, max_wait
        )
        tx.put(RATE_LIMITS, key, tat)
        return reservations


def memory_job_wake(db: MemoryDatabase) -> JobWake:
    """Wake-ups for the memory send-job queue: jobs committed to this memory database."""
    return JobWake(lambda: db.notifier.subscribe(SEND_JOBS_CHANNEL))
