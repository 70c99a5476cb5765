"""``handle_idempotently``: consume an event at most once per consumer, retry with backoff,
dead-letter when retrying cannot help.

The handler runs in a savepoint inside the transaction that holds the inbox row's lock, so its
database effects and the "processed" mark commit together, and a concurrent duplicate waits
and then skips. On failure the handler's effects are rolled back and the failure is recorded in
the same (still open) transaction. The caller (a broker adapter) turns the outcome into an ack,
a delayed redelivery, or a message on the dead-letter exchange.

A dead letter is recorded (``failed_at``, committed) before the broker adapter publishes it to
the dead-letter exchange. If that publish fails, or the process dies in between, the message
comes back; it is then dead-lettered again, never acknowledged as handled. So a dead letter is
in the dead-letter queue before its message is acknowledged: at worst twice, never not at all.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Protocol

import attrs

from craig.domain.events import EventEnvelope
from craig.domain.inbox import DeadLetter, RetryLater, RetryPolicy, after_failure
from craig.ports.inbox import HasInbox, InboxRecord
from craig.ports.messaging import EventHandler, NonRetryable
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.events.error_text import describe


class InboxWork(UnitOfWork, HasInbox, Protocol):
    """The unit of work :func:`handle_idempotently` runs a handler in."""


@attrs.frozen
class Processed:
    pass


@attrs.frozen
class AlreadyHandled:
    """Processed before: ack and skip."""

    record: InboxRecord


@attrs.frozen
class Retry:
    decision: RetryLater
    record: InboxRecord


@attrs.frozen
class DeadLettered:
    """Publish to the dead-letter exchange, then ack. ``again``: the row was dead-lettered by an
    earlier delivery whose publish may not have happened (see the module docstring)."""

    decision: DeadLetter
    record: InboxRecord
    again: bool = False


InboxOutcome = Processed | AlreadyHandled | Retry | DeadLettered


async def handle_idempotently(
    uow: InboxWork,
    envelope: EventEnvelope,
    handler: EventHandler,
    consumer: str,
    queue: str,
    policy: RetryPolicy = RetryPolicy(),
    jitter: Callable[[], float] = random.random,
) -> InboxOutcome:
    """Run ``handler`` for ``envelope`` once for ``consumer``; see the module docstring."""
    async with uow:
        record = await uow.inbox.begin_attempt(consumer, envelope, queue)
        if record.processed_at is not None:
            await uow.commit()
            return AlreadyHandled(record)
        if record.failed_at is not None:
            await uow.commit()
            return DeadLettered(DeadLetter(retry_count=max(0, record.error_count - 1)), record, again=True)
        try:
            async with uow:
                await handler(envelope, uow)
                await uow.commit()
        except Exception as error:
            decision = after_failure(
                record.error_count + 1,
                retryable=not isinstance(error, NonRetryable),
                jitter=jitter(),
                policy=policy,
            )
            retry_in = decision.delay if isinstance(decision, RetryLater) else None
            updated = await uow.inbox.record_failure(consumer, envelope.id, describe(error), retry_in=retry_in)
            await uow.commit()
            if isinstance(decision, RetryLater):
                return Retry(decision, updated)
            return DeadLettered(decision, updated)
        await uow.inbox.mark_processed(consumer, envelope.id)
        await uow.commit()
        return Processed()
