"""The dead-letter queue on RabbitMQ, for ``craig dlx list`` and ``craig dlx replay``.

Letters are read with ``basic.get`` without acknowledging; the ones not taken are returned with
``nack(requeue=True)`` (RabbitMQ puts them back in place). A replayed letter is re-published to
its original queue (through the default exchange) without its retry headers, and only then
acknowledged, so a crash in between duplicates it rather than losing it. A letter whose queue no
longer exists (a stopped instance's broadcast queue, a removed subscription) is left where it is,
with a warning, and the replay goes on; its inbox row keeps its dead-letter mark, unless the
queue went away between the check and the publish (the row was reset by then; the warning says
so).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import structlog
from aio_pika.abc import AbstractIncomingMessage
from faststream.rabbit import RabbitQueue

from craig.adapters.rabbit.bus import RabbitEventBus, Unroutable, _forwarded, retry_count
from craig.domain.constants import RABBIT_DEAD_LETTER_SCAN_MAX_MESSAGES
from craig.ports.messaging import DeadLetterInfo, DeadLetterQueue, unambiguous

log = structlog.get_logger(__name__)


def _info(message: AbstractIncomingMessage, prefix: str) -> DeadLetterInfo:
    headers: dict[str, Any] = dict(message.headers or {})
    queue = str(headers.get("x-original-queue", ""))
    try:
        envelope = json.loads(message.body)
        event_id = UUID(str(envelope["id"]))
        event_type = str(envelope.get("type", "unknown"))
    except Exception:
        event_id = UUID(int=0)
        event_type = "unparseable"
    first: datetime | None = None
    with contextlib.suppress(TypeError, ValueError):  # a header Craig did not write
        first = datetime.fromisoformat(str(headers["x-first-failed-at"])) if headers.get("x-first-failed-at") else None
    return DeadLetterInfo(
        event_id=event_id,
        event_type=event_type,
        consumer=str(headers.get("x-consumer") or queue.removeprefix(f"{prefix}.")),
        queue=queue,
        retry_count=retry_count(headers),
        last_error=str(headers.get("x-last-error", "")),
        first_failed_at=first,
    )


async def take_messages(queue: Any, limit: int) -> list[AbstractIncomingMessage]:
    """Up to ``limit`` messages of ``queue``, taken without acknowledging them: each must end
    acknowledged (removed) or given back with :func:`put_back`."""
    taken: list[AbstractIncomingMessage] = []
    while len(taken) < limit:
        message = await queue.get(no_ack=False, fail=False)
        if message is None:
            break
        taken.append(message)
    return taken


async def put_back(messages: Sequence[AbstractIncomingMessage]) -> None:
    """Give ``messages`` back to their queue (``nack(requeue=True)``), last first, so RabbitMQ
    puts them back in their order, whatever fails meanwhile."""
    for message in reversed(messages):
        with contextlib.suppress(Exception):
            await message.nack(requeue=True)


def _kept(info: DeadLetterInfo, why: str) -> None:
    log.warning(
        f"dead letter not replayed, it stays in the dead-letter queue: {why} (a stopped instance's "
        "broadcast queue, or a subscription since removed)",
        event_id=str(info.event_id),
        queue=info.queue,
        consumer=info.consumer,
    )


class RabbitDeadLetters(DeadLetterQueue):
    def __init__(self, bus: RabbitEventBus) -> None:
        self.bus = bus

    async def _queue(self) -> Any:
        await self.bus.connect([])
        return await self.bus.broker.declare_queue(RabbitQueue(self.bus.dead_letter_queue, durable=True))

    async def count(self) -> int:
        queue = await self._queue()
        declared = await queue.declare()  # a fresh declare: the cached result is stale
        return int(declared.message_count or 0)

    async def _take_all(self, limit: int) -> list[AbstractIncomingMessage]:
        return await take_messages(await self._queue(), limit)

    async def peek(self, limit: int) -> list[DeadLetterInfo]:
        taken = await self._take_all(RABBIT_DEAD_LETTER_SCAN_MAX_MESSAGES)
        try:
            letters = sorted((_info(m, self.bus.prefix) for m in taken), key=lambda info: info.event_id)
        finally:
            await put_back(taken)
        return letters[:limit]

    async def replay(
        self,
        event_ids: Sequence[UUID] | None,
        limit: int,
        before_requeue: Callable[[DeadLetterInfo], Awaitable[None]],
    ) -> list[DeadLetterInfo]:
        wanted = set(event_ids) if event_ids is not None else None
        taken = await self._take_all(RABBIT_DEAD_LETTER_SCAN_MAX_MESSAGES)
        chosen: list[tuple[DeadLetterInfo, AbstractIncomingMessage]] = []
        rest: list[AbstractIncomingMessage] = []
        for message in taken:
            info = _info(message, self.bus.prefix)
            if (wanted is None or info.event_id in wanted) and info.queue:
                chosen.append((info, message))
            else:
                rest.append(message)
        chosen.sort(key=lambda pair: pair[0].event_id)  # UUIDv7: the original order
        rest.extend(message for _, message in chosen[limit:])
        done: list[DeadLetterInfo] = []
        exists: dict[str, bool] = {}
        try:
            for info, message in chosen[:limit]:
                if info.queue not in exists:
                    exists[info.queue] = await self.bus.queue_exists(info.queue)
                if not exists[info.queue]:
                    _kept(info, "its queue no longer exists")
                    rest.append(message)
                    continue
                await before_requeue(info)
                headers = {
                    k: v
                    for k, v in _forwarded(dict(message.headers or {})).items()
                    if not k.startswith(("x-original-queue", "x-first-failed-at", "x-consumer"))
                }
                try:
                    await self.bus._send(message.body, queue=info.queue, message_id=message.message_id, headers=headers)
                except Unroutable:
                    exists[info.queue] = False
                    _kept(info, "its queue was deleted during the replay (its inbox row was already reset)")
                    rest.append(message)
                    continue
                await message.ack()
                done.append(info)
        finally:
            await put_back(rest)
        return done

    async def discard(self, event_ids: Sequence[UUID], queue: str | None = None) -> list[DeadLetterInfo]:
        taken = await self._take_all(RABBIT_DEAD_LETTER_SCAN_MAX_MESSAGES)
        infos = [_info(message, self.bus.prefix) for message in taken]
        chosen = {id(info) for info in unambiguous(infos, event_ids, queue)}
        gone: list[DeadLetterInfo] = []
        kept: list[AbstractIncomingMessage] = []
        unread = list(reversed(list(zip(taken, infos, strict=True))))
        try:
            while unread:
                message, info = unread.pop()
                if id(info) in chosen:
                    await message.ack()  # removed from the dead-letter queue for good
                    gone.append(info)
                else:
                    kept.append(message)
        finally:
            for message in [*(m for m, _ in reversed(unread)), *reversed(kept)]:  # back in place, whatever happened
                with contextlib.suppress(Exception):
                    await message.nack(requeue=True)
        return gone
