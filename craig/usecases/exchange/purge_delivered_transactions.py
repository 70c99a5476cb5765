"""Use case: retention of delivered exchange transactions, run by the cleanup worker.

Delivered transactions pile up with their payloads; once every job of one was sent long enough
ago (``CRAIG_EXCHANGE__RETENTION_DAYS``, :data:`craig.domain.constants.EXCHANGE_RETENTION`)
nobody needs it any more.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Protocol

from craig.ports.exchange import HasExchangeTransactions
from craig.ports.unit_of_work import UnitOfWork


class PurgeDeliveredTransactionsWork(UnitOfWork, HasExchangeTransactions, Protocol):
    """The unit of work :class:`PurgeDeliveredTransactions` uses."""


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
