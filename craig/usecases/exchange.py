"""Use cases: partners, exchange transactions and the operator's retry of a failed send job.

Sending happens later, in the send-job worker (:mod:`craig.usecases.dispatch_send_job`): a
transaction only makes the jobs durable, in the same database transaction as itself. The caller's commit may
be held by the HTTP idempotency layer; these use cases never know.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Protocol
from uuid import UUID

import attrs

from craig.domain.access import Principal, Role
from craig.domain.errors import NotFound
from craig.domain.exchange import InvalidJobTransition, JobStatus, SendJob
from craig.domain.exchange_transactions import (
    ExchangeTransaction,
    UnknownPartners,
    can_see,
    check_request,
    new_transaction,
)
from craig.domain.pages import Page, PageRequest
from craig.domain.partners import Partner, PartnerNameTaken, new_partner
from craig.ports.clock import Clock
from craig.ports.exchange import HasExchangeTransactions, HasPartners, HasSendJobs, SendJobStats
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.ids import new_id


class RegisterPartnerWork(UnitOfWork, HasPartners, Protocol):
    """The unit of work :class:`RegisterPartner` uses."""


class ListPartnersWork(UnitOfWork, HasPartners, Protocol):
    """The unit of work :class:`ListPartners` uses."""


class StartTransactionWork(UnitOfWork, HasExchangeTransactions, HasPartners, HasSendJobs, Protocol):
    """The unit of work :class:`StartTransaction` uses."""


class GetTransactionWork(UnitOfWork, HasExchangeTransactions, HasSendJobs, Protocol):
    """The unit of work :class:`GetTransaction` uses."""


class RetrySendJobWork(UnitOfWork, HasSendJobs, Protocol):
    """The unit of work :class:`RetrySendJob` uses."""


class SendJobBacklogWork(UnitOfWork, HasSendJobs, Protocol):
    """The unit of work :class:`SendJobBacklog` uses."""


class PurgeDeliveredTransactionsWork(UnitOfWork, HasExchangeTransactions, Protocol):
    """The unit of work :class:`PurgeDeliveredTransactions` uses."""


@attrs.frozen(kw_only=True)
class PartnerRegistration:
    name: str
    base_url: str
    token_url: str
    client_id: str
    client_secret: str = attrs.field(repr=False)
    rate_limit_rpm: int | None = None
    send_path: str | None = None
    records_path: str | None = None


class RegisterPartner:
    """Admins register a partner agency; its ``client_secret`` is stored encrypted.
    409 ``partner-name-taken`` when the name is in use."""

    def __init__(self, uow: RegisterPartnerWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(self, principal: Principal, command: PartnerRegistration) -> Partner:
        principal.require(Role.ADMIN)
        partner = new_partner(id=new_id(), now=self.clock.now(), **attrs.asdict(command))
        async with self.uow:
            if not await self.uow.partners.add(partner):
                raise PartnerNameTaken(partner.name)
            await self.uow.commit()
        return partner


class ListPartners:
    """Partners by name, one page with the exact total. Every authenticated principal may list."""

    def __init__(self, uow: ListPartnersWork) -> None:
        self.uow = uow

    async def __call__(self, page: PageRequest) -> Page[Partner]:
        async with self.uow:
            return await self.uow.partners.list(page)


@attrs.frozen
class TransactionView:
    transaction: ExchangeTransaction
    jobs: Sequence[SendJob]


class StartTransaction:
    """Record a transaction and one ``pending`` send job per partner, in ONE transaction, so
    either all of them will be delivered or none was accepted. 422 ``unknown-partners`` names
    ids that match no partner."""

    def __init__(self, uow: StartTransactionWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(
        self, principal: Principal, partner_ids: Sequence[UUID], payload: Mapping[str, Any]
    ) -> TransactionView:
        check_request(partner_ids, payload)
        transaction, jobs = new_transaction(
            id=new_id(),
            partner_ids=partner_ids,
            payload=payload,
            created_by=principal.sub,
            job_ids=[new_id() for _ in partner_ids],
            correlation_ids=[new_id() for _ in partner_ids],
            now=self.clock.now(),
        )
        async with self.uow:
            known = await self.uow.partners.get_many(partner_ids)
            unknown = [p for p in partner_ids if p not in known]
            if unknown:
                raise UnknownPartners(unknown)
            await self.uow.exchange_transactions.add(transaction)
            await self.uow.send_jobs.add_many(jobs)
            await self.uow.commit()
        return TransactionView(transaction, jobs)


class GetTransaction:
    """A transaction with every job's status, attempts, last error and next attempt. Its creator,
    supervisors and admins may read it; anyone else gets 404."""

    def __init__(self, uow: GetTransactionWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, transaction_id: UUID) -> TransactionView:
        async with self.uow:
            transaction = await self.uow.exchange_transactions.get(transaction_id)
            if transaction is None or not can_see(transaction, principal):
                raise NotFound("exchange transaction", transaction_id)
            jobs = await self.uow.send_jobs.for_transaction(transaction_id)
        return TransactionView(transaction, jobs)


class RetrySendJob:
    """Supervisors (and admins) put a ``failed`` job back in the queue, due now, with a fresh
    attempt budget. 404 for an unknown job; 409 ``invalid-job-transition`` unless it is failed."""

    def __init__(self, uow: RetrySendJobWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, job_id: UUID) -> SendJob:
        principal.require(Role.SUPERVISOR, Role.ADMIN)
        async with self.uow:
            job = await self.uow.send_jobs.retry_failed(job_id)
            if job is None:
                current = await self.uow.send_jobs.get(job_id)
                if current is None:
                    raise NotFound("send job", job_id)
                raise InvalidJobTransition(current.status, JobStatus.PENDING)
            await self.uow.commit()
        return job


class SendJobBacklog:
    """Jobs by status and when the oldest due job became due (database clock), for operators."""

    def __init__(self, uow: SendJobBacklogWork) -> None:
        self.uow = uow

    async def __call__(self) -> SendJobStats:
        async with self.uow:
            return await self.uow.send_jobs.stats()


class PurgeDeliveredTransactions:
    """Retention, run by the cleanup worker: a transaction whose every job was sent more than
    ``older_than`` ago is deleted with its jobs, at most ``batch_size`` transactions at a time
    (oldest first), in its own short transaction. Anything not delivered (pending, in flight, failed) is kept, and
    so is the rest of its transaction."""

    def __init__(self, uow_factory: Callable[[], PurgeDeliveredTransactionsWork]) -> None:
        self.uow_factory = uow_factory

    async def __call__(self, older_than: timedelta, batch_size: int) -> int:
        uow = self.uow_factory()
        async with uow:
            deleted = await uow.exchange_transactions.purge_delivered(older_than, batch_size)
            await uow.commit()
        return deleted
