"""Use case: an operator lists the outbox events whose publish keeps failing, and ends their backoff.

A publish that fails (the broker down, a nack, a timeout) leaves its event unpublished with a
capped exponential backoff (1 s doubling to 5 min), and the younger events of its aggregate wait
behind it so that order per aggregate holds. ``craig status`` counts them; ``craig outbox
failing`` shows which they are, why they failed and what waits behind each, and ``craig outbox
retry`` makes them due now once the cause is fixed, instead of waiting out the backoff. Each
retry is recorded as ``outbox_retry`` by the operator, in the same transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol
from uuid import UUID

from craig.domain.audit import AuditAction
from craig.domain.constants import AUDIT_MAX_RESOURCE_IDS
from craig.ports.outbox import FailingEvent, HasOutbox
from craig.usecases.audit.record import AuditWork, operator_entry
from craig.usecases.audit.resource_types import OUTBOX_EVENT

#: The ``resource_id`` of a retry of every failing event (``--all``).
EVERY_FAILING_EVENT = "all"


class FailingEventsWork(AuditWork, HasOutbox, Protocol):
    """The unit of work :class:`FailingEvents` uses."""


class FailingEvents:
    def __init__(self, uow_factory: Callable[[], FailingEventsWork]) -> None:
        self.uow_factory = uow_factory

    async def failing(self, limit: int) -> list[FailingEvent]:
        """Up to ``limit`` failing events, oldest staged first."""
        uow = self.uow_factory()
        async with uow:
            return await uow.outbox.failing(limit)

    async def retry(self, event_ids: Sequence[UUID] | None, limit: int) -> list[FailingEvent]:
        """Make those of ``event_ids`` that are failing (or, without ids, up to ``limit``, oldest
        first) due now, in one transaction with an ``outbox_retry`` entry naming the events made
        due (its ``resource_id`` is ``all`` for a retry without ids). An id that is not a
        failing event (published, unknown, or being published by a relay right now) changes
        nothing and is not returned."""
        wanted = None if event_ids is None else sorted(set(event_ids), key=str)
        uow = self.uow_factory()
        async with uow:
            retried = await uow.outbox.retry_failing(wanted, limit if wanted is None else len(wanted))
            entry = operator_entry(
                AuditAction.OUTBOX_RETRY,
                OUTBOX_EVENT,
                EVERY_FAILING_EVENT if wanted is None else None,
                resource_ids=[event.id for event in retried][:AUDIT_MAX_RESOURCE_IDS],
            )
            await uow.audit.append([entry])
            await uow.commit()
        return retried
