"""PostgreSQL adapters of the outbox ports (seed: ``stage_event`` and ``drain_once``).

Improvements on the seed: a batch is marked published with ONE statement; a failed publish
gets capped exponential backoff (``next_attempt_at``) instead of being retried on every pass;
and an event is held back while an older event of its aggregate is unpublished outside the
batch, so several relays keep per-aggregate order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import TYPE_CHECKING
from uuid import UUID

import msgspec
from sqlalchemy import text
from sqlalchemy.dialects.postgresql import ARRAY, FLOAT, JSONB, TEXT
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import bindparam

from craig.adapters.postgres.database import json_value
from craig.adapters.postgres.errors import db_errors
from craig.domain.events import EventEnvelope
from craig.domain.outbox import publishable_in_order
from craig.ports.outbox import (
    OutboxBatch,
    OutboxRecord,
    OutboxRelayStore,
    OutboxStats,
    OutboxWriter,
    PublishFailure,
)

if TYPE_CHECKING:
    from craig.adapters.postgres.database import PostgresDatabase
    from craig.adapters.postgres.notify import PostgresListener
    from craig.adapters.postgres.uow import PostgresUnitOfWork

CHANNEL = "craig_outbox"
_JSON = msgspec.json.Encoder()  # the same JSON as json.dumps, several times faster

_STAGE = text(
    """
    INSERT INTO event_outbox (id, envelope, event_type, aggregate_type, aggregate_id)
    VALUES (:id, :envelope, :event_type, :aggregate_type, :aggregate_id)
    """
).bindparams(bindparam("envelope", type_=JSONB))

# Several events in one statement; WITH ORDINALITY keeps their order in the identity column.
_STAGE_MANY = text(
    """
    INSERT INTO event_outbox (id, envelope, event_type, aggregate_type, aggregate_id)
    SELECT e.id, e.envelope, e.event_type, e.aggregate_type, e.aggregate_id
      FROM unnest(:event_ids, :envelopes, :types, :aggregate_types, :aggregate_ids)
           WITH ORDINALITY AS e(id, envelope, event_type, aggregate_type, aggregate_id, n)
     ORDER BY e.n
    """
).bindparams(
    bindparam("event_ids", type_=ARRAY(PG_UUID(as_uuid=True))),
    bindparam("envelopes", type_=ARRAY(JSONB)),
    bindparam("types", type_=ARRAY(TEXT)),
    bindparam("aggregate_types", type_=ARRAY(TEXT)),
    bindparam("aggregate_ids", type_=ARRAY(TEXT)),
)

_CLAIM = text(
    """
    SELECT id, seq, envelope, attempts, aggregate_type, aggregate_id
      FROM event_outbox
     WHERE published_at IS NULL AND next_attempt_at <= now()
     ORDER BY seq
     LIMIT :limit
       FOR UPDATE SKIP LOCKED
    """
)
# For the aggregates of a claimed batch: the oldest unpublished event that is NOT in the batch.
_OLDEST_OUTSIDE = text(
    """
    SELECT o.aggregate_type, o.aggregate_id, min(o.seq) AS seq
      FROM event_outbox o
      JOIN unnest(:types, :ids) AS a(aggregate_type, aggregate_id)
        ON o.aggregate_type = a.aggregate_type AND o.aggregate_id = a.aggregate_id
     WHERE o.published_at IS NULL AND NOT (o.id = ANY(:batch))
     GROUP BY o.aggregate_type, o.aggregate_id
    """
).bindparams(
    bindparam("types", type_=ARRAY(TEXT)),
    bindparam("ids", type_=ARRAY(TEXT)),
    bindparam("batch", type_=ARRAY(PG_UUID(as_uuid=True))),
)
_MARK_PUBLISHED = text(
    "UPDATE event_outbox SET published_at = now(), last_error = NULL WHERE id = ANY(:ids)"
).bindparams(bindparam("ids", type_=ARRAY(PG_UUID(as_uuid=True))))
_MARK_FAILED = text(
    """
    UPDATE event_outbox o
       SET attempts = o.attempts + 1,
           last_error = f.error,
           next_attempt_at = now() + make_interval(secs => f.delay)
      FROM unnest(:ids, :errors, :delays) AS f(id, error, delay)
     WHERE o.id = f.id
    """
).bindparams(
    bindparam("ids", type_=ARRAY(PG_UUID(as_uuid=True))),
    bindparam("errors", type_=ARRAY(TEXT)),
    bindparam("delays", type_=ARRAY(FLOAT)),
)
_PURGE = text(
    """
    DELETE FROM event_outbox WHERE id IN (
        SELECT id FROM event_outbox
         WHERE published_at IS NOT NULL AND published_at < now() - make_interval(secs => :age)
         LIMIT :batch)
    """
)
_STATS = text(
    """
    SELECT count(*) AS pending, min(created_at) AS oldest,
           count(*) FILTER (WHERE attempts > 0) AS failing, now() AS db_now
      FROM event_outbox WHERE published_at IS NULL
    """
)


def _envelope(raw: object) -> EventEnvelope:
    return EventEnvelope.from_json(json_value(raw))


def stage_params(envelopes: Sequence[EventEnvelope], *, as_text: bool = False) -> dict[str, list[object]]:
    """The array parameters of a multi-event INSERT (``_STAGE_MANY`` and the send-job pass);
    ``as_text`` gives the envelopes as JSON text, for statements that bypass SQLAlchemy's JSONB."""
    return {
        "event_ids": [e.id for e in envelopes],
        "envelopes": [_JSON.encode(e.to_json()).decode() if as_text else e.to_json() for e in envelopes],
        "types": [e.type for e in envelopes],
        "aggregate_types": [e.aggregate_type for e in envelopes],
        "aggregate_ids": [e.aggregate_id for e in envelopes],
    }


class PostgresOutboxWriter(OutboxWriter):
    def __init__(self, uow: PostgresUnitOfWork) -> None:
        self.uow = uow

    async def stage(self, envelope: EventEnvelope) -> None:
        async with db_errors():
            await self.uow.connection.execute(
                _STAGE,
                {
                    "id": envelope.id,
                    "envelope": envelope.to_json(),
                    "event_type": envelope.type,
                    "aggregate_type": envelope.aggregate_type,
                    "aggregate_id": envelope.aggregate_id,
                },
            )

    async def stage_many(self, envelopes: Sequence[EventEnvelope]) -> None:
        if len(envelopes) <= 1:
            for envelope in envelopes:
                await self.stage(envelope)
            return
        async with db_errors():
            await self.uow.connection.execute(_STAGE_MANY, stage_params(envelopes))


class _PostgresBatch(OutboxBatch):
    def __init__(self, conn: AsyncConnection, events: list[OutboxRecord]) -> None:
        self._conn = conn
        self._events = events

    @property
    def events(self) -> Sequence[OutboxRecord]:
        return self._events

    async def mark_published(self, ids: Sequence[UUID]) -> None:
        if ids:
            async with db_errors():
                await self._conn.execute(_MARK_PUBLISHED, {"ids": list(ids)})

    async def mark_failed(self, failures: Sequence[PublishFailure]) -> None:
        if failures:
            async with db_errors():
                await self._conn.execute(
                    _MARK_FAILED,
                    {
                        "ids": [f.id for f in failures],
                        "errors": [f.error for f in failures],  # cut by the relay
                        "delays": [f.retry_in.total_seconds() for f in failures],
                    },
                )


class PostgresOutboxRelayStore(OutboxRelayStore):
    def __init__(self, database: PostgresDatabase, listener: PostgresListener | None = None) -> None:
        self.database = database
        self.listener = listener

    @asynccontextmanager
    async def claim_batch(self, limit: int) -> AsyncIterator[OutboxBatch]:
        async with self.database.transaction() as conn:
            rows = (await conn.execute(_CLAIM, {"limit": limit})).mappings().all()
            records = [OutboxRecord(r["id"], r["seq"], _envelope(r["envelope"]), r["attempts"]) for r in rows]
            oldest_outside: dict[tuple[str, str], int] = {}
            if records:
                aggregates = sorted({(r["aggregate_type"], r["aggregate_id"]) for r in rows})
                outside = await conn.execute(
                    _OLDEST_OUTSIDE,
                    {
                        "types": [a[0] for a in aggregates],
                        "ids": [a[1] for a in aggregates],
                        "batch": [r.id for r in records],
                    },
                )
                oldest_outside = {(t, i): seq for t, i, seq in outside.all()}
            yield _PostgresBatch(conn, publishable_in_order(records, oldest_outside))

    async def wait_for_events(self, timeout: timedelta) -> None:
        if self.listener is None or not self.listener.connected:
            await asyncio.sleep(timeout.total_seconds())
            return
        await self.listener.wait(CHANNEL, "", timeout)

    async def purge_published(self, older_than: timedelta, batch_size: int) -> int:
        async with self.database.transaction() as conn:
            result = await conn.execute(_PURGE, {"age": older_than.total_seconds(), "batch": batch_size})
            return int(result.rowcount or 0)

    async def stats(self) -> OutboxStats:
        async with self.database.transaction() as conn:
            row = (await conn.execute(_STATS)).mappings().one()
        return OutboxStats(
            pending=row["pending"],
            oldest_pending_created_at=row["oldest"],
            failing=row["failing"],
            now=row["db_now"],
        )
