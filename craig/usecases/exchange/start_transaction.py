"""Use case: start an exchange transaction, one send job per partner.

Sending happens later, in the send-job worker (:mod:`craig.usecases.exchange.dispatch_send_job`):
a transaction only makes the jobs durable, in the same database transaction as itself. The
caller's commit may be held by the HTTP idempotency layer; this use case never knows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.exchange_transactions import UnknownPartners, check_request, new_transaction
from craig.ports.clock import Clock
from craig.ports.exchange import HasExchangeTransactions, HasPartners, HasSendJobs
from craig.usecases.audit.record import AuditWork, record
from craig.usecases.audit.resource_types import EXCHANGE_TRANSACTION
from craig.usecases.exchange.transaction_view import TransactionView
from craig.usecases.ids import new_id


class StartTransactionWork(AuditWork, HasExchangeTransactions, HasPartners, HasSendJobs, Protocol):
    """The unit of work :class:`StartTransaction` uses."""


class StartTransaction:
    """Record a transaction and one ``pending`` send job per partner, in ONE transaction, so
    either all of them will be delivered or none was accepted. 422 ``unknown-partners`` names
    ids that match no partner. Recorded as ``create`` with the ids of its send jobs, in the same
    transaction."""

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
            job_ids = [job.id for job in jobs]
            await record(
                self.uow, principal, AuditAction.CREATE, EXCHANGE_TRANSACTION, transaction.id, resource_ids=job_ids
            )
            await self.uow.commit()
        return TransactionView(transaction, jobs)
