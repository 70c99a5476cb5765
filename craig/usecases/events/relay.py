"""The outbox relay: ``drain_once`` publishes one batch.

One batch: claim due events (``FOR UPDATE SKIP LOCKED``, per-aggregate order kept by the store),
publish them with broker confirms, many in flight at once — in rounds: each round publishes the
oldest unpublished event of every aggregate of the batch with ONE ``publish_many`` (at most
``concurrency`` unconfirmed at a time), so two events of one aggregate are never in flight
together, and an aggregate whose event was not confirmed (nack, return, timeout) publishes
nothing more in this batch — then mark the confirmed ones with ONE statement and give the
failed ones a capped, jittered backoff with ONE statement, and commit. Only confirmed events are
marked published. A relay that dies mid-batch commits nothing: its events are published again
by the next relay (at-least-once; the inbox absorbs duplicates).
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable

import attrs

from craig.domain.constants import DELIVERY_ERROR_MAX_CHARS, OUTBOX_PUBLISH_CONCURRENCY
from craig.domain.events import UNREADABLE_ENVELOPE
from craig.domain.outbox import publish_backoff
from craig.ports.messaging import Publisher
from craig.ports.outbox import OutboxRecord, OutboxRelayStore, PublishFailure
from craig.usecases.events.error_text import describe


@attrs.frozen
class DrainReport:
    claimed: int
    published: int
    failed: int
    seconds: float


class OutboxRelay:
    def __init__(
        self,
        store: OutboxRelayStore,
        publisher: Publisher,
        *,
        batch_size: int,
        concurrency: int = OUTBOX_PUBLISH_CONCURRENCY,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.store = store
        self.publisher = publisher
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.jitter = jitter

    async def drain_once(self) -> DrainReport:
        started = time.perf_counter()
        async with self.store.claim_batch(self.batch_size) as batch:
            events = list(batch.events)
            # A row this version cannot read fails like a publish: it backs off, shows in
            # `craig outbox failing`, and holds up only its own aggregate.
            failures: list[PublishFailure] = [
                PublishFailure(
                    row.id,
                    f"{UNREADABLE_ENVELOPE}: {row.error}"[:DELIVERY_ERROR_MAX_CHARS],
                    publish_backoff(row.attempts + 1, self.jitter()),
                )
                for row in batch.unreadable
            ]
            published: list[OutboxRecord] = []
            # Each aggregate's events, oldest first; a round takes the head of each.
            queues = [deque(group) for group in _by_aggregate(events)]
            while queues:
                heads = [queue.popleft() for queue in queues]
                outcomes = await self._publish_round(heads)
                waiting: list[deque[OutboxRecord]] = []
                for queue, record, error in zip(queues, heads, outcomes, strict=True):
                    if error is not None:
                        delay = publish_backoff(record.attempts + 1, self.jitter())
                        failures.append(PublishFailure(record.id, describe(error), delay))
                        continue  # younger events of this aggregate wait for it
                    published.append(record)
                    if queue:
                        waiting.append(queue)
                queues = waiting
            await batch.mark_published([record.id for record in published])
            await batch.mark_failed(failures)
        claimed = len(events) + len(batch.unreadable)
        return DrainReport(claimed, len(published), len(failures), time.perf_counter() - started)

    async def _publish_round(self, heads: list[OutboxRecord]) -> list[Exception | None]:
        """One outcome per event; a publisher that fails as a whole fails each of them."""
        try:
            outcomes = await self.publisher.publish_many([r.envelope for r in heads], window=self.concurrency)
        except Exception as error:
            return [error] * len(heads)
        if len(outcomes) != len(heads):  # never mark an event whose outcome is unknown
            unknown = RuntimeError(f"the publisher gave {len(outcomes)} outcomes for {len(heads)} events")
            return [unknown] * len(heads)
        return outcomes


def _by_aggregate(events: list[OutboxRecord]) -> list[list[OutboxRecord]]:
    groups: dict[tuple[str, str], list[OutboxRecord]] = {}
    for record in sorted(events, key=lambda r: r.seq):
        groups.setdefault(record.aggregate, []).append(record)
    return list(groups.values())
