"""Use case: an operator lists the outbox events whose publish keeps failing, and ends their backoff.

A publish that fails (the broker down, a nack, a timeout) leaves its event unpublished with a
capped exponential backoff (1 s doubling to 5 min), and the younger events of its aggregate wait
behind it so that order per aggregate holds. ``craig status`` counts them; ``craig outbox
failing`` shows which they are, why they failed and what waits behind each, and ``craig outbox
retry`` makes them due now once the cause is fixed, instead of waiting out the backoff. Each
retry is recorded as ``outbox_retry`` by the operator, in the same transaction. An event that can
never go (a stored envelope this version cannot read, one the broker refuses for good) is
removed by ``craig outbox discard``, recorded as ``outbox_discard``, so that the events of its
aggregate behind it go on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol
from uuid import UUID

import attrs

from craig.domain.audit import AuditAction
from craig.ports.outbox import FailingEvent, HasOutbox
from craig.usecases.audit.record import AuditWork, operator_entries, operator_entry
from craig.usecases.audit.resource_types import CASE, OUTBOX_EVENT

#: The ``resource_id`` of a retry of every failing event (``--all``).
EVERY_FAILING_EVENT = "all"


class FailingEventsWork(AuditWork, HasOutbox, Protocol):
    """The unit of work :class:`FailingEvents` uses."""


@attrs.frozen
class FailingList:
    events: list[FailingEvent]
    #: Every failing event, shown or not.
    total: int


@attrs.frozen
class RetryReport:
    retried: list[FailingEvent]
    #: Failing events still backing off once the retry committed (beyond its limit, held by a
    #: relay or another retry, or not asked for).
    backing_off: int


class FailingEvents:
    def __init__(self, uow_factory: Callable[[], FailingEventsWork]) -> None:
        self.uow_factory = uow_factory

    async def failing(self, limit: int) -> FailingList:
        """Up to ``limit`` failing events, oldest staged first, and how many there are."""
        uow = self.uow_factory()
        async with uow:
            events = await uow.outbox.failing(limit)
            counts = await uow.outbox.count_failing()
        return FailingList(events, max(counts.failing, len(events)))

    async def retry(self, event_ids: Sequence[UUID] | None, limit: int) -> RetryReport:
        """Make those of ``event_ids`` that are failing and backing off (or, without ids, up to
        ``limit``, oldest first) due now, in one transaction with ``outbox_retry`` entries
        naming the events made due (one entry per ``AUDIT_MAX_RESOURCE_IDS`` of them;
        ``resource_id`` ``all`` for a retry without ids). An id that is not backing off (due
        already, published, unknown, or held by a relay or another retry right now) changes
        nothing and is not returned; a retry that made nothing due records nothing."""
        wanted = None if event_ids is None else sorted(set(event_ids), key=str)
        uow = self.uow_factory()
        async with uow:
            retried = await uow.outbox.retry_failing(wanted, limit if wanted is None else len(wanted))
            ids = [event.id for event in retried]
            entries = operator_entries(
                AuditAction.OUTBOX_RETRY, OUTBOX_EVENT, EVERY_FAILING_EVENT if wanted is None else None, ids
            )
            if entries:
                await uow.audit.append(entries)
            counts = await uow.outbox.count_failing()
            await uow.commit()
        return RetryReport(retried, counts.backing_off)

    async def discard(self, event_ids: Sequence[UUID]) -> list[FailingEvent]:
        """Delete those of ``event_ids`` that are failing and not held right now; returns them
        as they were. In the same transaction, an ``outbox_discard`` entry for each deleted
        event (its id; its case when its aggregate is one, so that it shows in the case's
        history), and entries naming the ids asked for that were not deleted (published, never
        failed, unknown, or held by a relay right now): a mistyped or raced discard leaves its
        trace too."""
        wanted = sorted(set(event_ids), key=str)
        uow = self.uow_factory()
        async with uow:
            discarded = await uow.outbox.discard_failing(wanted)
            entries = [
                operator_entry(AuditAction.OUTBOX_DISCARD, OUTBOX_EVENT, event.id, case_id=_case_of(event))
                for event in discarded
            ]
            gone = {event.id for event in discarded}
            missed = [ident for ident in wanted if ident not in gone]
            entries += operator_entries(AuditAction.OUTBOX_DISCARD, OUTBOX_EVENT, None, missed)
            if entries:
                await uow.audit.append(entries)
            await uow.commit()
        return discarded


def _case_of(event: FailingEvent) -> UUID | None:
    """The case an event is about, when its aggregate is a case."""
    if event.aggregate_type != CASE:
        return None
    try:
        return UUID(event.aggregate_id)
    except ValueError:
        return None
