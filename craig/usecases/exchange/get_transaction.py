"""Use case: read an exchange transaction with the state of each of its send jobs.

Its creator, supervisors and admins may read it
(:func:`craig.domain.exchange_transactions.can_see`); anyone else gets 404, as if it did not
exist.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.errors import NotFound
from craig.domain.exchange_transactions import can_see
from craig.ports.exchange import HasExchangeTransactions, HasSendJobs
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import EXCHANGE_TRANSACTION
from craig.usecases.exchange.transaction_view import TransactionView


class GetTransactionWork(AuditWork, HasExchangeTransactions, HasSendJobs, Protocol):
    """The unit of work :class:`GetTransaction` uses."""


class GetTransaction:
    """A transaction with every job's status, attempts, last error and next attempt. Its creator,
    supervisors and admins may read it; anyone else gets 404 (recorded as ``denied``). The read
    is recorded (``read``) in its transaction."""

    def __init__(self, uow: GetTransactionWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, transaction_id: UUID) -> TransactionView:
        read = AuditAction.READ
        async with refusals_recorded(self.uow, principal, read, EXCHANGE_TRANSACTION, transaction_id), self.uow:
            transaction = await self.uow.exchange_transactions.get(transaction_id)
            if transaction is None or not can_see(transaction, principal):
                raise NotFound("exchange transaction", transaction_id)
            jobs = await self.uow.send_jobs.for_transaction(transaction_id)
            await record(self.uow, principal, read, EXCHANGE_TRANSACTION, transaction.id)
            await self.uow.commit()
        return TransactionView(transaction, jobs)
