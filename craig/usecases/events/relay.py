"""The outbox relay: ``drain_once`` publishes one batch.

One batch: claim due events (``FOR UPDATE SKIP LOCKED``, per-aggregate order kept by the store),
publish them with broker confirms — concurrently across aggregates, one after another within an
aggregate — then mark the published ones with ONE statement and give the failed ones a capped,
jittered backoff with ONE statement, and commit. A relay that dies mid-batch commits nothing:
its events are published again by the next relay (at-least-once; the inbox absorbs duplicates).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable

import attrs

from craig.domain.constants import OUTBOX_PUBLISH_CONCURRENCY
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
            if not events:
                return DrainReport(0, 0, 0, time.perf_counter() - started)
            published: list[OutboxRecord] = []
            failures: list[PublishFailure] = []
            gate = asyncio.Semaphore(self.concurrency)

            async def publish_in_order(group: list[OutboxRecord]) -> None:
                for record in group:
                    try:
                        async with gate:
                            await self.publisher.publish(record.envelope)
                    except Exception as error:
                        delay = publish_backoff(record.attempts + 1, self.jitter())
                        failures.append(PublishFailure(record.id, describe(error), delay))
                        return  # younger events of this aggregate wait for it
                    published.append(record)

            await asyncio.gather(*(publish_in_order(group) for group in _by_aggregate(events)))
            await batch.mark_published([record.id for record in published])
            await batch.mark_failed(failures)
        return DrainReport(len(events), len(published), len(failures), time.perf_counter() - started)


def _by_aggregate(events: list[OutboxRecord]) -> list[list[OutboxRecord]]:
    groups: dict[tuple[str, str], list[OutboxRecord]] = {}
    for record in sorted(events, key=lambda r: r.seq):
        groups.setdefault(record.aggregate, []).append(record)
    return list(groups.values())
