"""The RabbitMQ bus (FastStream ``RabbitBroker``) of the production profile.

Topology, per subscription ``c`` (queue prefix ``p``):

* ``p.c``: the durable work queue, bound to the topic exchange (``craig.events``) once per
  event-type pattern. Instances compete for its messages.
* ``p.c.retry.N`` (N = 1..INBOX_MAX_RETRIES): durable delay queues without consumers. A failed
  delivery is re-published there with a per-message TTL (the jittered backoff) and acked at
  once — the consumer never sleeps holding a message. On expiry RabbitMQ dead-letters it back to
  ``p.c`` through the default exchange. One queue per retry level keeps head-of-line blocking
  within one level, whose delays differ at most by the jitter.
* ``craig.dlx`` (topic) with the durable queue ``p.dead-letters`` bound to ``#``: poison
  messages land there with ``x-original-queue``, ``x-retry-count``, ``x-last-error`` and
  ``x-first-failed-at``, for ``craig dlx list`` / ``replay``.
* ``craig.events.unrouted`` (fanout), the events exchange's ``alternate-exchange``, with the
  durable queue ``p.unrouted``: an event no queue takes is kept there, never dropped.

A message is acknowledged only once its outcome is settled (re-published to its retry queue or
to the DLX, confirmed). When settling fails, the consumer holds the message for a jittered
backoff that doubles per consecutive failure on its queue (``BUS_SETTLE_BACKOFF_BASE`` up to
``BUS_SETTLE_BACKOFF_CAP``) and only then requeues it: a DLX that keeps failing costs one
redelivery, and one inbox transaction, per pause instead of a tight loop.

A broadcast subscription gets ``p.c.<instance>`` (auto-deleted) so every instance sees every
event. Its retry queues ``p.c.<instance>.retry.N`` are the instance's own too: RabbitMQ deletes
them ``RABBIT_BROADCAST_QUEUE_EXPIRES_MS`` after they were last declared (``x-expires``), so
those of an instance that died go away. A queue no one consumes counts as unused however much is
published to it, so a live instance's broadcast retry waits at most half that lease and its queue
is declared again first when the lease could run out before the retry leaves it (see
``_retry``); an instance that stops cleanly deletes its broadcast retry queues itself. A retry
queue found gone (deleted by hand) is declared again and the retry re-published.

The relay's batches go out through ``publish_many``: aio-pika directly, on a connection and
confirm-mode channel of their own, with many publishes in flight (a window) and each event's own
confirm awaited. Publishing waits for the broker's confirm, is persistent and ``mandatory``: a
message the broker cannot route is returned and its publish fails, except an event, which then goes to
``p.unrouted`` directly. That covers an events exchange declared before Craig gave it its
alternate exchange: RabbitMQ refuses to redeclare it with the argument (PRECONDITION_FAILED),
so Craig logs how to add it by policy and keeps the exchange as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, cast

import aio_pika
import aiormq
import attrs
import structlog
from faststream import AckPolicy
from faststream.rabbit import ExchangeType, RabbitBroker, RabbitExchange, RabbitQueue
from faststream.rabbit.annotations import RabbitMessage
from faststream.rabbit.schemas import Channel
from faststream.rabbit.schemas.queue import ClassicQueueArgs

from craig.adapters.telemetry import TRACEPARENT, Span, SpanKind, originating, recording, sane_request_id, span
from craig.domain.constants import (
    BUS_SETTLE_BACKOFF_BASE,
    BUS_SETTLE_BACKOFF_CAP,
    INBOX_MAX_RETRIES,
    RABBIT_BROADCAST_QUEUE_EXPIRES_MS,
    RABBIT_CONNECT_TIMEOUT,
    RABBIT_GRACEFUL_STOP_TIMEOUT,
    RABBIT_HEADER_ERROR_MAX_CHARS,
    RABBIT_INFRASTRUCTURE_RETRY,
    RABBIT_PING_TIMEOUT,
    RABBIT_PREFETCH,
    RABBIT_PUBLISH_TIMEOUT,
)
from craig.domain.events import EventEnvelope
from craig.domain.outbox import capped_backoff
from craig.ports.errors import BrokerUnavailable
from craig.ports.messaging import (
    Acknowledge,
    Delivery,
    DeliveryOutcome,
    EventBus,
    RedeliverLater,
    SendToDeadLetters,
    Subscription,
)

log = structlog.get_logger(__name__)

ALTERNATE_EXCHANGE = "alternate-exchange"


class Unroutable(BrokerUnavailable):
    """The broker returned a ``mandatory`` message: no queue is bound for it."""


class RabbitEventBus(EventBus):
    def __init__(
        self,
        url: str,
        *,
        events_exchange: str,
        dlx_exchange: str,
        queue_prefix: str,
        instance_id: str,
        prefetch: int = RABBIT_PREFETCH,
        publish_timeout_seconds: float = RABBIT_PUBLISH_TIMEOUT.total_seconds(),
        broadcast_queue_expires_ms: int = RABBIT_BROADCAST_QUEUE_EXPIRES_MS,
        connect_timeout_seconds: float = RABBIT_CONNECT_TIMEOUT.total_seconds(),
    ) -> None:
        self.url = url
        self.broadcast_queue_expires_ms = broadcast_queue_expires_ms
        self.prefix = queue_prefix
        self.instance_id = instance_id
        self.publish_timeout = publish_timeout_seconds
        self.broker = RabbitBroker(
            url,
            log_level=logging.DEBUG,
            # A logger of our own: FastStream's default one gets a handler of its own (on stdout)
            # and stops propagating; this one goes through the root handler, as JSON.
            logger=logging.getLogger("faststream.access.rabbit"),
            default_channel=Channel(prefetch_count=prefetch, publisher_confirms=True, on_return_raises=True),
            graceful_timeout=RABBIT_GRACEFUL_STOP_TIMEOUT.total_seconds(),
            # The first connection fails after this (aio-pika then stops trying: no reconnect
            # loop is left behind, which cancelling the connect from outside would leave).
            timeout=connect_timeout_seconds,
            on_reconnected=[self._reconnected],
        )
        self._on_connected: list[Callable[[], object]] = []
        self.unrouted_exchange = RabbitExchange(f"{events_exchange}.unrouted", type=ExchangeType.FANOUT, durable=True)
        self.unrouted_queue = f"{queue_prefix}.unrouted"
        self.events = RabbitExchange(
            events_exchange,
            type=ExchangeType.TOPIC,
            durable=True,
            arguments={ALTERNATE_EXCHANGE: self.unrouted_exchange.name},
        )
        #: False when the events exchange predates its alternate exchange (see the module docstring).
        self.has_alternate_exchange: bool | None = None
        self.dlx = RabbitExchange(dlx_exchange, type=ExchangeType.TOPIC, durable=True)
        self.dead_letter_queue = f"{queue_prefix}.dead-letters"
        self._consumer_of: dict[str, str] = {}  # work queue -> inbox consumer key
        self._settle_failures: dict[str, int] = {}  # work queue -> consecutive settle failures
        self._retry_queues: dict[str, _RetryQueue] = {}  # every retry queue this bus declared
        self._connected = False
        #: ``publish_many``'s own connection and confirm-mode channel, opened on first use.
        self._batch_connection: aio_pika.abc.AbstractRobustConnection | None = None
        self._batch_channel: aio_pika.abc.AbstractChannel | None = None
        self._batch_lock = asyncio.Lock()
        self._side_lock = asyncio.Lock()
        self._in_flight: dict[str, _InFlight] = {}  # message id -> its publishes (see _alone_with)

    # --- names ------------------------------------------------------------------------------
    def work_queue(self, subscription: Subscription) -> str:
        base = f"{self.prefix}.{subscription.consumer}"
        return f"{base}.{self.instance_id}" if subscription.broadcast else base

    def retry_queue(self, work_queue: str, level: int) -> str:
        return f"{work_queue}.retry.{min(max(level, 1), INBOX_MAX_RETRIES)}"

    # --- lifecycle --------------------------------------------------------------------------
    async def connect(self, subscriptions: Sequence[Subscription]) -> None:
        try:
            if not self._connected:  # once per connection, not on every call (metrics call it too)
                await self._first_connection()
                await self.broker.declare_exchange(self.unrouted_exchange)
                unrouted = await self.broker.declare_queue(RabbitQueue(self.unrouted_queue, durable=True))
                await unrouted.bind(self.unrouted_exchange.name)
                await self._declare_events_exchange()
                await self.broker.declare_exchange(self.events)
                await self.broker.declare_exchange(self.dlx)
                dead = await self.broker.declare_queue(RabbitQueue(self.dead_letter_queue, durable=True))
                await dead.bind(self.dlx.name, routing_key="#")
                self._connected = True
            for subscription in subscriptions:
                if not subscription.broadcast:
                    await self._declare(subscription)
        except BrokerUnavailable:
            raise
        except Exception as error:
            # A timeout's text is empty: the type says what happened.
            reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            raise BrokerUnavailable(f"cannot reach RabbitMQ ({_safe(self.url)}): {reason}") from error

    async def _declare_events_exchange(self) -> None:
        """Declare the events exchange with its alternate exchange, on a connection of its own: a
        refused declaration closes its channel, which must not be the one everything else uses."""
        connection = await aio_pika.connect(self.url, timeout=self.publish_timeout)
        try:
            channel = await connection.channel()
            try:
                await channel.declare_exchange(
                    self.events.name, aio_pika.ExchangeType.TOPIC, durable=True, arguments=self.events.arguments
                )
                self.has_alternate_exchange = True
            except aiormq.exceptions.ChannelPreconditionFailed as error:
                self.has_alternate_exchange = False
                self.events = RabbitExchange(self.events.name, type=ExchangeType.TOPIC, durable=True, declare=False)
                log.warning(
                    "the events exchange was declared without an alternate exchange; Craig keeps unroutable "
                    "events all the same (RabbitMQ returns them, Craig re-publishes them to the unrouted "
                    "queue), but the broker should do it. Fix: rabbitmqctl set_policy craig-unrouted "
                    f"'^{re.escape(self.events.name)}$' "
                    f'\'{{"{ALTERNATE_EXCHANGE}":"{self.unrouted_exchange.name}"}}\' --apply-to exchanges',
                    exchange=self.events.name,
                    unrouted_queue=self.unrouted_queue,
                    error=str(error),
                )
        finally:
            await connection.close()

    async def _declare(self, subscription: Subscription) -> RabbitQueue:
        name = self.work_queue(subscription)
        self._consumer_of[name] = subscription.inbox_consumer(self.instance_id)
        broadcast = subscription.broadcast
        extra: dict[str, Any] = {"x-expires": self.broadcast_queue_expires_ms} if broadcast else {}
        queue = RabbitQueue(name, durable=not broadcast, auto_delete=broadcast)
        declared = await self.broker.declare_queue(queue)
        for pattern in subscription.event_types:
            await declared.bind(self.events.name, routing_key=pattern)
        for level in range(1, INBOX_MAX_RETRIES + 1):
            retry_name = self.retry_queue(name, level)
            retry = _RetryQueue(
                durable=not broadcast,
                arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": name, **extra},
                broadcast=broadcast,
                declared_at=asyncio.get_running_loop().time(),
            )
            await self.broker.declare_queue(
                RabbitQueue(retry_name, durable=retry.durable, arguments=cast("ClassicQueueArgs", retry.arguments))
            )
            self._retry_queues[retry_name] = retry
        return queue

    async def _declare_again(self, name: str, retry: _RetryQueue) -> None:
        """Declare the retry queue ``name`` again, as it was first declared: made anew if it is
        gone, its lease renewed if not. On a channel of its own, bounded by the publish timeout: a
        declaration the broker refuses (the queue was made again by hand, with other arguments)
        closes that channel, never the one the consumers and publishes use."""

        async def declare(channel: aio_pika.abc.AbstractRobustChannel) -> None:
            await channel.declare_queue(name, durable=retry.durable, arguments=retry.arguments, robust=False)

        try:
            await self._on_a_channel_of_its_own(declare, self.publish_timeout)
        except Exception as error:
            raise BrokerUnavailable(
                f"cannot declare the retry queue {name} again: {type(error).__name__}: {error}"
            ) from error
        retry.declared_at = asyncio.get_running_loop().time()

    async def _on_a_channel_of_its_own(
        self, work: Callable[[aio_pika.abc.AbstractRobustChannel], Awaitable[None]], timeout: float
    ) -> None:
        """``work`` on a fresh channel of ``publish_many``'s connection, closed afterwards; the
        whole of it (opening the connection too) within ``timeout`` seconds."""
        async with asyncio.timeout(timeout):
            channel = await (await self._side_connection()).channel()
            try:
                await work(channel)
            finally:
                if not channel.is_closed:
                    await channel.close()

    async def _delete_broadcast_retry_queues(self) -> None:
        """This instance's broadcast retry queues, which no other instance reads (its broadcast work
        queues went with their consumer), and any retry still waiting in them, which was for this
        instance alone. Called after the consumers stopped, so no retry is settled into them
        meanwhile; an unreachable broker leaves them to their lease."""
        names = [name for name, retry in self._retry_queues.items() if retry.broadcast]
        if not names:
            return
        for name in names:
            del self._retry_queues[name]

        async def delete(channel: aio_pika.abc.AbstractRobustChannel) -> None:
            for name in names:
                await channel.queue_delete(name)

        try:
            await self._on_a_channel_of_its_own(delete, RABBIT_PING_TIMEOUT.total_seconds())
        except Exception as error:
            log.warning(
                "could not delete this instance's broadcast retry queues; RabbitMQ deletes them "
                "once their lease runs out",
                queues=names,
                error=str(error),
            )

    async def consume(self, consumers: Sequence[tuple[Subscription, Delivery]]) -> None:
        await self.connect([])  # the queues are declared below, once each
        for subscription, delivery in consumers:
            queue = await self._declare(subscription)
            subscriber = self.broker.subscriber(
                RabbitQueue(queue.name, durable=queue.durable, auto_delete=queue.auto_delete, declare=False),
                ack_policy=AckPolicy.MANUAL,
                # The body as it came: the handler parses it, and dead-letters what does not
                # parse. FastStream's own decoding (JSON by content type) raises before the
                # handler runs, and such a message stays unacknowledged, holding a prefetch slot.
                decoder=_body_as_it_came,
            )
            subscriber(self._handler(queue.name, delivery))
            if subscription.on_connected is not None:
                self._on_connected.append(subscription.on_connected)
        try:
            await self.broker.start()
        except Exception as error:
            raise BrokerUnavailable(f"cannot start consuming from RabbitMQ: {error}") from error
        self._reconnected()

    def _reconnected(self, *_connection: object) -> None:
        """After consuming starts, and (aio-pika) once a lost connection is back with its
        channels, queues, bindings and consumers restored."""
        if self._on_connected:
            log.info("subscriptions (re)connected", instance=self.instance_id, hooks=len(self._on_connected))
        for hook in self._on_connected:
            try:
                hook()
            except Exception as error:  # one hook must not keep the others from running
                log.warning("an on_connected hook failed", error=str(error))

    async def _first_connection(self) -> None:
        """``broker.connect()``, which no cancel interrupts half-way. aio-pika's robust
        connection catches a cancel that reaches its connect and starts a reconnect loop no one
        holds, which swallows every later cancel too: a process stopping while a silent broker
        held its connect never exited. So a cancel waits for the attempt (bounded by the connect
        timeout), closes what it opened, and is raised then."""
        connecting = asyncio.ensure_future(self.broker.connect())
        try:
            await asyncio.shield(connecting)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await connecting
            with contextlib.suppress(Exception):
                await self.broker.stop()
            raise

    async def close(self) -> None:
        self._on_connected.clear()
        try:
            await self.broker.stop()
        finally:
            self._connected = False
            try:
                await self._delete_broadcast_retry_queues()
            finally:
                connection, self._batch_connection, self._batch_channel = self._batch_connection, None, None
                if connection is not None:
                    await connection.close()

    async def ping(self) -> None:
        if not self._connected or not await self.broker.ping(timeout=RABBIT_PING_TIMEOUT.total_seconds()):
            raise BrokerUnavailable(f"RabbitMQ ({_safe(self.url)}) does not answer")

    # --- publishing -------------------------------------------------------------------------
    async def publish(self, envelope: EventEnvelope) -> None:
        """Publish in a ``publish`` span that continues the trace the event was staged in; the
        message's ``traceparent`` header is that span's (or, with tracing off, the stager's)."""
        with self._publish_span(envelope) as current:
            await self._publish(envelope, current.headers)

    def _publish_span(self, envelope: EventEnvelope) -> contextlib.AbstractContextManager[Span]:
        """The ``publish`` span of ``envelope``, continuing the trace it was staged in."""
        return span(
            f"publish {envelope.type}",
            kind=SpanKind.PRODUCER,
            parent=envelope.traceparent,
            attributes=_message_attributes(envelope, self.events.name),
        )

    async def _publish(self, envelope: EventEnvelope, trace_headers: dict[str, str]) -> None:
        headers = _event_headers(envelope, trace_headers)
        body = json.dumps(envelope.to_message()).encode()
        correlation_id = str(envelope.correlation_id) if envelope.correlation_id else None
        try:
            await self._send(
                body,
                exchange=self.events,
                routing_key=envelope.type,
                message_id=str(envelope.id),
                headers=headers,
                correlation_id=correlation_id,
            )
        except Unroutable:  # no alternate exchange took it (see the module docstring)
            await self._send(
                body,
                queue=self.unrouted_queue,
                message_id=str(envelope.id),
                headers={**headers, "x-unrouted-exchange": self.events.name, "x-unrouted-routing-key": envelope.type},
                correlation_id=correlation_id,
            )

    async def publish_many(self, envelopes: Sequence[EventEnvelope], *, window: int) -> list[Exception | None]:
        """Every envelope published with its own broker confirm awaited, at most ``window``
        unconfirmed at once, on ``publish_many``'s channel (aio-pika, without FastStream's
        per-message machinery). A nack, a return, a timeout or a lost channel is that
        envelope's outcome; a returned event goes to the unrouted queue as :meth:`publish` does."""
        if not envelopes:
            return []
        try:
            channel = await self._batch_publishing_channel()
        except Exception as error:
            failed = BrokerUnavailable(f"cannot reach RabbitMQ ({_safe(self.url)}): {type(error).__name__}: {error}")
            return [failed] * len(envelopes)
        events = await channel.get_exchange(self.events.name, ensure=False)
        gate = asyncio.Semaphore(max(1, window))

        async def one(envelope: EventEnvelope) -> Exception | None:
            try:
                if not recording():  # no span to make: the stored trace context goes in the headers
                    return await confirmed(envelope, _event_headers(envelope, {}))
                with self._publish_span(envelope) as current:
                    return await confirmed(envelope, _event_headers(envelope, current.headers))
            except Exception as error:  # its own headers or body cannot be made: it alone fails
                return error

        async def confirmed(envelope: EventEnvelope, headers: dict[str, Any]) -> Exception | None:
            body = json.dumps(envelope.to_message()).encode()
            async with gate:
                try:
                    # Each publish's deadline is a timer, not aio-pika's timeout=, which runs every
                    # publish in a task of its own.
                    try:
                        async with asyncio.timeout(self.publish_timeout):
                            await events.publish(_message(body, envelope, headers), routing_key=envelope.type)
                    except aiormq.exceptions.PublishError:  # returned: no alternate exchange took it
                        unrouted = {
                            **headers,
                            "x-unrouted-exchange": self.events.name,
                            "x-unrouted-routing-key": envelope.type,
                        }
                        async with asyncio.timeout(self.publish_timeout):
                            await channel.default_exchange.publish(
                                _message(body, envelope, unrouted), routing_key=self.unrouted_queue
                            )
                except aiormq.exceptions.PublishError as error:
                    return Unroutable(f"publish returned by RabbitMQ, no queue takes it: {error}")
                except Exception as error:
                    return BrokerUnavailable(f"publish not confirmed: {type(error).__name__}: {error}")
            return None

        return list(await asyncio.gather(*(one(envelope) for envelope in envelopes)))

    async def queue_exists(self, name: str) -> bool:
        """Whether RabbitMQ has a queue ``name`` (asked on a channel of its own: asking about a
        missing queue closes the channel)."""

        async def ask(channel: aio_pika.abc.AbstractRobustChannel) -> None:
            await channel.declare_queue(name, passive=True, robust=False)

        try:
            await self._on_a_channel_of_its_own(ask, self.publish_timeout)
        except aio_pika.exceptions.ChannelNotFoundEntity:
            return False
        except Exception as error:
            raise BrokerUnavailable(f"cannot ask RabbitMQ about the queue {name}: {error}") from error
        return True

    @asynccontextmanager
    async def _alone_with(self, message_id: str | None) -> AsyncIterator[None]:
        """While no other publish of this bus's with ``message_id`` is in flight. aiormq finds the
        publish a returned message answers by its ``message_id``, the latest with that id on the
        channel: two at once (two subscriptions retrying one event) would have one's return
        fail the other's publish, and the returned one reported confirmed (lost)."""
        if message_id is None:
            yield
            return
        entry = self._in_flight.setdefault(message_id, _InFlight())
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if not entry.users:
                del self._in_flight[message_id]

    async def _side_connection(self) -> aio_pika.abc.AbstractRobustConnection:
        """A connection of this bus's own beside FastStream's, opened on first use: ``publish_many``
        publishes on it, and declarations that must not risk the consumers' channel run on it."""
        async with self._side_lock:
            if self._batch_connection is None:
                self._batch_connection = await aio_pika.connect_robust(self.url, timeout=self.publish_timeout)
            return self._batch_connection

    async def _batch_publishing_channel(self) -> aio_pika.abc.AbstractChannel:
        async with self._batch_lock:
            if self._batch_channel is None or self._batch_channel.is_closed:
                self._batch_channel = await (await self._side_connection()).channel(
                    publisher_confirms=True, on_return_raises=True
                )
            return self._batch_channel

    async def _send(self, body: bytes, **kwargs: Any) -> None:
        try:
            async with self._alone_with(kwargs.get("message_id")):
                await self.broker.publish(
                    body,
                    persist=True,
                    mandatory=True,
                    content_type="application/json",
                    timeout=self.publish_timeout,
                    **kwargs,
                )
        except aiormq.exceptions.PublishError as error:
            raise Unroutable(f"publish returned by RabbitMQ, no queue takes it: {error}") from error
        except Exception as error:
            raise BrokerUnavailable(f"publish not confirmed: {type(error).__name__}: {error}") from error

    async def publish_dlx(
        self,
        body: bytes,
        *,
        message_id: str | None,
        headers: dict[str, Any],
        original_queue: str,
        retry_count: int,
        last_error: str,
        first_failed_at: datetime | None,
    ) -> None:
        """The message and why it died, on the DLX."""
        dead_headers = {
            **_forwarded(headers),
            "x-original-queue": original_queue,
            "x-consumer": self._consumer_of.get(original_queue, original_queue.removeprefix(f"{self.prefix}.")),
            "x-retry-count": retry_count,
            "x-last-error": last_error[:RABBIT_HEADER_ERROR_MAX_CHARS],
            "x-first-failed-at": (first_failed_at or datetime.now().astimezone()).isoformat(),
        }

        async def send() -> None:
            await self._send(
                body, exchange=self.dlx, routing_key=original_queue, message_id=message_id, headers=dead_headers
            )

        try:
            await send()
        except Unroutable:
            log.warning(
                "the dead-letter queue was gone (deleted by hand?); it is declared again", queue=self.dead_letter_queue
            )
            await self._declare_dead_letter_queue_again()
            await send()

    async def _declare_dead_letter_queue_again(self) -> None:
        """The dead-letter queue, bound to the DLX, as :meth:`connect` declares it."""

        async def declare(channel: aio_pika.abc.AbstractRobustChannel) -> None:
            queue = await channel.declare_queue(self.dead_letter_queue, durable=True, robust=False)
            await queue.bind(self.dlx.name, routing_key="#")

        try:
            await self._on_a_channel_of_its_own(declare, self.publish_timeout)
        except Exception as error:
            raise BrokerUnavailable(f"cannot declare the dead-letter queue again: {error}") from error

    # --- consuming --------------------------------------------------------------------------
    def _handler(self, queue: str, delivery: Delivery) -> Any:
        async def handle(body: Any, message: RabbitMessage) -> None:
            raw: bytes = message.raw_message.body
            headers = dict(message.headers or {})
            try:
                envelope = EventEnvelope.from_json(json.loads(raw))
            except Exception as error:  # a payload that does not parse: no retry can help
                outcome: DeliveryOutcome = SendToDeadLetters(0, f"unparseable message: {error}", None)
            else:
                try:
                    outcome = await self._deliver(delivery, envelope, queue, headers)
                except Exception as error:  # the inbox itself failed (database down)
                    log.warning("delivery failed before the inbox recorded it", queue=queue, error=str(error))
                    outcome = RedeliverLater(RABBIT_INFRASTRUCTURE_RETRY, retry_count(headers), str(error), None)
            try:
                await self._settle(queue, raw, message.message_id, headers, outcome)
            except Exception as error:
                await self._requeue_after_pause(queue, message, error)
                return
            self._settle_failures.pop(queue, None)
            await message.ack()

        return handle

    async def _deliver(
        self, delivery: Delivery, envelope: EventEnvelope, queue: str, headers: dict[str, Any]
    ) -> DeliveryOutcome:
        """Deliver in a ``consume`` span, child of the publisher's (the ``traceparent`` header),
        bound to the event's ``correlation_id``: the handler's log lines carry it as
        ``request_id``, and what the handler stages carries it on."""
        attributes = {**_message_attributes(envelope, queue), "messaging.consumer.group.name": queue}
        with (
            originating(sane_request_id(envelope.correlation_id)),
            span(f"consume {envelope.type}", kind=SpanKind.CONSUMER, parent=headers, attributes=attributes) as current,
        ):
            outcome = await delivery(envelope, queue)
            current.set("craig.delivery.outcome", type(outcome).__name__)
            if isinstance(outcome, SendToDeadLetters):
                current.failed(outcome.error[:RABBIT_HEADER_ERROR_MAX_CHARS])
            return outcome

    async def _requeue_after_pause(self, queue: str, message: RabbitMessage, error: Exception) -> None:
        failures = self._settle_failures.get(queue, 0) + 1
        self._settle_failures[queue] = failures
        pause = capped_backoff(failures, BUS_SETTLE_BACKOFF_BASE, BUS_SETTLE_BACKOFF_CAP, random.random())
        log.warning(
            "could not settle a message; it is requeued after a pause",
            queue=queue,
            error=str(error),
            consecutive_failures=failures,
            pause_seconds=round(pause.total_seconds(), 3),
        )
        await asyncio.sleep(pause.total_seconds())
        await message.nack(requeue=True)

    async def _settle(
        self,
        queue: str,
        raw: bytes,
        message_id: str | None,
        headers: dict[str, Any],
        outcome: DeliveryOutcome,
    ) -> None:
        if isinstance(outcome, Acknowledge):
            return
        if isinstance(outcome, RedeliverLater):
            retry_headers = {
                **headers,
                "x-retry-count": outcome.retry_count,
                "x-last-error": outcome.error[:RABBIT_HEADER_ERROR_MAX_CHARS],
            }
            if outcome.first_failed_at:
                retry_headers["x-first-failed-at"] = outcome.first_failed_at.isoformat()
            await self._retry(raw, self.retry_queue(queue, outcome.retry_count), message_id, retry_headers, outcome)
            return
        await self.publish_dlx(
            raw,
            message_id=message_id,
            headers=headers,
            original_queue=queue,
            retry_count=outcome.retry_count,
            last_error=outcome.error,
            first_failed_at=outcome.first_failed_at,
        )

    async def _retry(
        self, raw: bytes, name: str, message_id: str | None, headers: dict[str, Any], outcome: RedeliverLater
    ) -> None:
        """Re-publish to the retry queue ``name``, and once more after declaring it again if
        RabbitMQ returns the message (the queue is gone).

        A broadcast retry queue expires a lease after it was last declared, taking what it holds.
        So a broadcast retry waits at most half the lease (however long the backoff), and its
        queue is declared again first unless the retry leaves it before half the lease has run:
        a retry always leaves its queue at least half a lease before the queue could expire."""
        retry = self._retry_queues.get(name)
        delay = outcome.delay
        if retry is not None and retry.broadcast:
            half_lease = self.broadcast_queue_expires_ms / 2000
            delay = min(delay, timedelta(seconds=half_lease))
            if asyncio.get_running_loop().time() + delay.total_seconds() - retry.declared_at > half_lease:
                await self._declare_again(name, retry)

        async def send() -> None:
            await self._send(raw, queue=name, message_id=message_id, headers=headers, expiration=delay)

        try:
            await send()
        except Unroutable:
            if retry is None:
                raise
            log.warning("a retry queue was gone (deleted by hand?); it is declared again", queue=name)
            await self._declare_again(name, retry)
            await send()


@attrs.define
class _InFlight:
    lock: asyncio.Lock = attrs.field(factory=asyncio.Lock)
    users: int = 0


async def _body_as_it_came(message: Any) -> bytes:
    """FastStream's decoder for Craig's subscribers: no decoding at all."""
    body: bytes = message.body
    return body


def retry_count(headers: Mapping[str, Any]) -> int:
    """A message's ``x-retry-count`` header: 0 when absent or not a whole number (anyone can
    publish to the exchange; a header Craig did not write must not stop a message)."""
    value = headers.get("x-retry-count", 0)
    if isinstance(value, bool) or not isinstance(value, int | str | bytes):
        return 0
    try:
        return max(0, int(value))
    except ValueError:
        return 0


@attrs.define
class _RetryQueue:
    """A retry queue as this bus declared it."""

    durable: bool
    arguments: dict[str, Any]
    #: A broadcast subscription's: this instance's own, with a lease (``x-expires``).
    broadcast: bool
    #: When it was last declared (the event loop's clock): the start of its lease.
    declared_at: float


def _event_headers(envelope: EventEnvelope, trace_headers: dict[str, str]) -> dict[str, Any]:
    """The headers every published event carries: its type, source, correlation id and the W3C
    trace context (the publish span's, or with tracing off the stager's)."""
    headers: dict[str, Any] = {"x-event-type": envelope.type, "x-source": envelope.source}
    if envelope.correlation_id:
        headers["x-correlation-id"] = str(envelope.correlation_id)
    headers.update(trace_headers or ({TRACEPARENT: envelope.traceparent} if envelope.traceparent else {}))
    return headers


def _message_attributes(envelope: EventEnvelope, destination: str) -> dict[str, str | int | float | bool]:
    return {
        "messaging.system": "rabbitmq",
        "messaging.destination.name": destination,
        "messaging.rabbitmq.destination.routing_key": envelope.type,
        "messaging.message.id": str(envelope.id),
    }


def _message(body: bytes, envelope: EventEnvelope, headers: dict[str, Any]) -> aio_pika.Message:
    """An event as :meth:`RabbitEventBus.publish` sends it: persistent JSON with its id."""
    return aio_pika.Message(
        body,
        headers=headers,
        content_type="application/json",
        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        message_id=str(envelope.id),
        correlation_id=str(envelope.correlation_id) if envelope.correlation_id else None,
    )


def _forwarded(headers: dict[str, Any]) -> dict[str, Any]:
    """Headers that travel with a message, minus the per-attempt ones."""
    return {k: v for k, v in headers.items() if not k.startswith(("x-retry", "x-last-error", "x-death"))}


def _safe(url: str) -> str:
    """The URL without its password, for messages."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://{rest.split('@', 1)[1]}"
    return url
