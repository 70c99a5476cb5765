"""Event delivery: the outbox relay loop, and every subscription's consumer (the relay, the
subscriptions and the inbox's retry policy come from the container).

A subscription's handler is wrapped in ``handle_idempotently`` on a fresh unit of work, and the
inbox outcome becomes the bus's delivery outcome (ack, redeliver later, dead-letter).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

import structlog

from craig.domain.events import EventEnvelope
from craig.domain.inbox import RetryPolicy
from craig.entrypoints import metrics
from craig.entrypoints.container import Container
from craig.entrypoints.profiles.lifecycle import unreachable
from craig.entrypoints.runtime import keep_trying
from craig.entrypoints.workers.consumers import subscriptions_for
from craig.entrypoints.workers.loop import Loop
from craig.ports.errors import PortError
from craig.ports.messaging import (
    Acknowledge,
    Delivery,
    DeliveryOutcome,
    RedeliverLater,
    SendToDeadLetters,
    Subscription,
)
from craig.usecases.events import AlreadyHandled, DeadLettered, OutboxRelay, Processed, Retry, handle_idempotently

log = structlog.get_logger(__name__)


def delivery_for(container: Container, subscription: Subscription) -> Delivery:
    consumer = subscription.inbox_consumer(container.instance_id())
    policy: RetryPolicy = container.inbox_retry_policy()

    async def deliver(envelope: EventEnvelope, queue: str) -> DeliveryOutcome:
        outcome = await handle_idempotently(
            container.uow(), envelope, subscription.handler, consumer, queue, policy=policy
        )
        result: DeliveryOutcome
        # The bus binds the event's correlation id (the request that staged it) as request_id.
        log.info(
            "event handled",
            consumer=consumer,
            event_id=str(envelope.id),
            event_type=envelope.type,
            outcome=type(outcome).__name__,
        )
        if isinstance(outcome, (Processed, AlreadyHandled)):
            result = Acknowledge()
        elif isinstance(outcome, Retry):
            metrics.inbox_retries.labels(subscription.consumer).inc()
            record = outcome.record
            result = RedeliverLater(
                outcome.decision.delay,
                outcome.decision.retry_count,
                record.last_error or "",
                record.first_failed_at,
            )
        else:
            assert isinstance(outcome, DeadLettered)
            metrics.inbox_dead_lettered.labels(subscription.consumer).inc()
            record = outcome.record
            log.warning(
                "event dead-lettered again (redelivered after it was dead-lettered)"
                if outcome.again
                else "event dead-lettered",
                consumer=consumer,
                event_id=str(envelope.id),
                error=record.last_error,
            )
            result = SendToDeadLetters(outcome.decision.retry_count, record.last_error or "", record.first_failed_at)
        return result

    return deliver


@asynccontextmanager
async def consumers_running(
    container: Container, *, broadcast_only: bool = False, subscriptions: Sequence[Subscription] | None = None
) -> AsyncIterator[None]:
    """Connect the bus (declaring every durable queue) and start consuming."""
    if subscriptions is None:
        subscriptions = subscriptions_for(container)
    chosen: Sequence[Subscription] = [s for s in subscriptions if s.broadcast or not broadcast_only]
    bus = container.event_bus()
    try:
        # Inside the try: a start that fails or is cancelled half-way stops the consumers it started.
        await bus.connect(subscriptions)
        await bus.consume([(s, delivery_for(container, s)) for s in chosen])
        yield
    finally:
        await bus.close()


@asynccontextmanager
async def consumers_running_when_reachable(
    container: Container, *, broadcast_only: bool = False
) -> AsyncIterator[None]:
    """:func:`consumers_running`, but a broker that cannot be reached does not stop the start:
    a ``degraded`` warning is logged and the consumers start in the background once it answers.
    A broker that refuses (wrong credentials, no such virtual host) is still an error."""
    async with AsyncExitStack() as stack:

        async def start() -> None:
            await stack.enter_async_context(consumers_running(container, broadcast_only=broadcast_only))

        try:
            await start()
        except PortError as error:
            if not unreachable(error):
                raise
            log.warning("dependency degraded: consumers wait for the broker", dependency="broker", error=str(error))
            await stack.enter_async_context(keep_trying("consumers", start))
        yield


def relay_loop(container: Container) -> Loop:
    relay: OutboxRelay = container.outbox_relay()
    store = container.outbox_relay_store()

    async def run_once() -> bool:
        report = await relay.drain_once()
        if report.claimed:
            metrics.outbox_batch_seconds.observe(report.seconds)
            metrics.outbox_published.inc(report.published)
            metrics.outbox_publish_failures.inc(report.failed)
        return report.published > 0

    return Loop(
        "outbox-relay",
        run_once,
        container.outbox_poll_interval(),
        idle=store.wait_for_events,
        lanes=container.outbox_relays(),
    )
