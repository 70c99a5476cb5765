"""PostgreSQL adapters of the outbox ports.

A batch is marked published with ONE statement; a failed publish gets capped exponential
backoff (``next_attempt_at``) instead of being retried on every pass.

Order per aggregate rests on two locks:

* Writers: staging takes ``pg_advisory_xact_lock`` on the aggregate (bigint key space) in the
  same statement as the INSERT and before the row's ``seq`` is drawn, so writers of one aggregate
  queue up and its events' ``seq`` order is their commit order. Every INSERT into
  ``event_outbox`` does so: these statements, and the send-job worker's pass
  (:mod:`~craig.adapters.postgres.send_job_pass`, which owns the lock's key and fragment).
* Relays: a relay claims a batch under ``pg_try_advisory_xact_lock`` on each of its aggregates
  (two-int key space, so never in a writer's way). A claim skips every aggregate another relay
  holds, and every row with an older sibling that is backing off after a failed publish, so a
  failing event holds back its own aggregate only and never fills a batch with rows that must
  wait. A last check in a fresh snapshot drops any row whose older sibling is still unpublished
  outside the batch (a race with a relay that just committed).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import ARRAY, FLOAT, JSONB, TEXT
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.sql import bindparam

from craig.adapters.postgres.database import DriverConnection, PostgresDatabase, json_value
from craig.adapters.postgres.notify import PostgresListener
from craig.adapters.postgres.send_job_pass import AGGREGATE_LOCK_KEY, aggregate_locks
from craig.adapters.postgres.session import PostgresSession
from craig.adapters.telemetry import current_origin, stamped
from craig.domain.events import EventEnvelope
from craig.domain.outbox import publishable_in_order
from craig.ports.outbox import (
    FailingCounts,
    FailingEvent,
    OutboxBatch,
    OutboxRecord,
    OutboxRelayStore,
    OutboxStats,
    OutboxWriter,
    PublishFailure,
    UnreadableEvent,
)

CHANNEL = "craig_outbox"

# The lock is taken while the source row is produced, so before the INSERT draws ``seq``.
_STAGE = text(
    f"""
    WITH locked AS MATERIALIZED (
        SELECT pg_advisory_xact_lock({AGGREGATE_LOCK_KEY.format(type=":aggregate_type", id=":aggregate_id")})
    )
    INSERT INTO event_outbox (id, envelope, event_type, aggregate_type, aggregate_id)
    SELECT :id, :envelope, :event_type, :aggregate_type, :aggregate_id FROM locked
    """
).bindparams(bindparam("envelope", type_=JSONB))


def stage_params(envelopes: Sequence[EventEnvelope]) -> dict[str, list[object]]:
    """The array parameters of :data:`_STAGE_MANY`, each envelope stamped with the request's id
    and trace context (:func:`craig.adapters.telemetry.stamped`), as every outbox writer does."""
    origin = current_origin()
    envelopes = [stamped(e, origin) for e in envelopes]
    return {
        "event_ids": [e.id for e in envelopes],
        "envelopes": [e.to_json() for e in envelopes],
        "types": [e.type for e in envelopes],
        "aggregate_types": [e.aggregate_type for e in envelopes],
        "aggregate_ids": [e.aggregate_id for e in envelopes],
    }


# Several events in one statement; WITH ORDINALITY keeps their order in the identity column.
# Every aggregate's lock is taken first, in key order (the aggregate consumes the sorted keys
# one by one), so two transactions staging the same aggregates cannot deadlock.
_STAGE_MANY = text(
    f"""
    WITH locked AS MATERIALIZED (
        {aggregate_locks("unnest(:aggregate_types, :aggregate_ids) AS a(t, i)")}
    )
    INSERT INTO event_outbox (id, envelope, event_type, aggregate_type, aggregate_id)
    SELECT e.id, e.envelope, e.event_type, e.aggregate_type, e.aggregate_id
      FROM locked,
           unnest(:event_ids, :envelopes, :types, :aggregate_types, :aggregate_ids)
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

#: The relays' advisory-lock class (first key of the two-int form); the second key is the
#: aggregate's 31-bit hash, so it reads back unchanged from ``pg_locks.objid``.
RELAY_LOCK_CLASS = 0x43524149
_RELAY_KEY = "(hashtext(o.aggregate_type || '/' || o.aggregate_id) & 2147483647)"

# busy: aggregates other relays hold (in this database). candidates: the oldest due rows whose
# aggregate is neither busy nor held back by an older row backing off (a probe into the small
# partial index of failed rows), row-locked with SKIP LOCKED. mine: their aggregates, locked for
# this relay; a row whose aggregate another relay locked in between is left out.
_CLAIM = text(
    f"""
    WITH busy AS MATERIALIZED (
        SELECT l.objid::bigint AS key
          FROM pg_locks l
         WHERE l.locktype = 'advisory' AND l.classid = {RELAY_LOCK_CLASS} AND l.objsubid = 2
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND l.pid <> pg_backend_pid()
    ), candidates AS MATERIALIZED (
        SELECT o.id, o.seq, o.envelope, o.attempts, o.aggregate_type, o.aggregate_id, {_RELAY_KEY} AS key
          FROM event_outbox o
         WHERE o.published_at IS NULL AND o.next_attempt_at <= now()
           AND {_RELAY_KEY} NOT IN (SELECT key FROM busy)
           AND NOT EXISTS (
               SELECT 1 FROM event_outbox p
                WHERE p.aggregate_type = o.aggregate_type AND p.aggregate_id = o.aggregate_id
                  AND p.published_at IS NULL AND p.attempts > 0 AND p.seq < o.seq
                  AND p.next_attempt_at > now())
         ORDER BY o.seq
         LIMIT :limit
           FOR UPDATE OF o SKIP LOCKED
    ), mine AS MATERIALIZED (
        SELECT d.key FROM (SELECT DISTINCT key FROM candidates) AS d
         WHERE pg_try_advisory_xact_lock({RELAY_LOCK_CLASS}, d.key)
    )
    SELECT c.id, c.seq, c.envelope::text AS envelope, c.attempts, c.aggregate_type, c.aggregate_id
      FROM candidates c
     WHERE c.key IN (SELECT key FROM mine)
     ORDER BY c.seq
    """
)
# For the aggregates of a claimed batch: the oldest unpublished event that is NOT in the batch.
# A new statement, so a new snapshot: it sees what relays committed while this one claimed.
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
# The backoff runs from now, not from the batch's claim (now() is when its transaction began, and
# the batch's publishes ran in between): a delay shorter than the publishing would be over at once.
_MARK_FAILED = text(
    """
    UPDATE event_outbox o
       SET attempts = o.attempts + 1,
           last_error = f.error,
           next_attempt_at = clock_timestamp() + make_interval(secs => f.delay)
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


# --- for operators ----------------------------------------------------------------------------------
#: What an operator sees of a failing event; ``o`` is its row. The count of the events waiting
#: behind it reads idx_event_outbox_aggregate_pending.
_FAILING_COLUMNS = """o.id, o.seq, o.event_type, o.aggregate_type, o.aggregate_id, o.created_at, o.attempts,
       o.last_error, o.next_attempt_at,
       (SELECT count(*) FROM event_outbox b
         WHERE b.published_at IS NULL AND b.aggregate_type = o.aggregate_type
           AND b.aggregate_id = o.aggregate_id AND b.seq > o.seq) AS waiting_behind"""
#: The failing events' ids, read whole from their partial index (idx_event_outbox_backing_off)
#: before anything is ordered or limited: ordered by ``seq`` with a small LIMIT, the planner
#: would rather walk every pending event in ``seq`` order (idx_event_outbox_pending) and filter,
#: which costs the whole backlog, and a backlog is when an operator asks.
_IS_FAILING = "published_at IS NULL AND attempts > 0"
_FAILING = text(
    f"""
    WITH failing AS MATERIALIZED (SELECT id FROM event_outbox WHERE {_IS_FAILING})
    SELECT {_FAILING_COLUMNS}
      FROM event_outbox o
     WHERE o.id = ANY(ARRAY(SELECT id FROM failing))
     ORDER BY o.seq
     LIMIT :limit
    """
)
#: What the insert trigger sends: delivered at COMMIT, so the relays claim what a retry made due.
_WAKE_RELAYS = text(f"SELECT pg_notify('{CHANNEL}', '')")
_COUNT_FAILING = text(
    f"""SELECT count(*) AS failing, count(*) FILTER (WHERE next_attempt_at > now()) AS backing_off
          FROM event_outbox WHERE {_IS_FAILING}"""
)
# Rows a relay holds (being published right now) are skipped, never waited for.
_RETRY_FAILING = text(
    f"""
    WITH failing AS MATERIALIZED (
        SELECT id FROM event_outbox
         WHERE {_IS_FAILING} AND (CAST(:ids AS uuid[]) IS NULL OR id = ANY(CAST(:ids AS uuid[])))
    ), chosen AS (
        SELECT id FROM event_outbox
         WHERE id = ANY(ARRAY(SELECT id FROM failing)) AND next_attempt_at > now()
         ORDER BY seq
         LIMIT :limit
           FOR UPDATE SKIP LOCKED)
    UPDATE event_outbox o SET next_attempt_at = now()
      FROM chosen
     WHERE o.id = chosen.id AND o.published_at IS NULL AND o.attempts > 0  -- the plan reads the index
    RETURNING {_FAILING_COLUMNS}
    """
)


# Rows a relay holds (being published right now) are skipped, never waited for.
_DISCARD_FAILING = text(
    f"""
    WITH chosen AS (
        SELECT o.id, o.seq FROM event_outbox o
         WHERE o.id = ANY(CAST(:ids AS uuid[])) AND o.published_at IS NULL AND o.attempts > 0
           FOR UPDATE SKIP LOCKED
    ), shown AS (
        SELECT {_FAILING_COLUMNS} FROM event_outbox o JOIN chosen USING (id)
    ), gone AS (
        DELETE FROM event_outbox o USING chosen WHERE o.id = chosen.id RETURNING o.id
    )
    SELECT shown.* FROM shown JOIN gone USING (id) ORDER BY shown.seq
    """
)


def _failing(row: Mapping[str, Any]) -> FailingEvent:
    return FailingEvent(
        id=row["id"],
        event_type=row["event_type"],
        aggregate_type=row["aggregate_type"],
        aggregate_id=row["aggregate_id"],
        created_at=row["created_at"],
        attempts=row["attempts"],
        last_error=row["last_error"],
        next_attempt_at=row["next_attempt_at"],
        waiting_behind=row["waiting_behind"],
    )


def _envelope(raw: object) -> EventEnvelope:
    return EventEnvelope.from_json(json_value(raw))


class PostgresOutboxWriter(OutboxWriter):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    async def stage(self, envelope: EventEnvelope) -> None:
        envelope = stamped(envelope)  # the request's id and trace context (craig.adapters.telemetry)
        await self.session.execute(
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
        await self.session.execute(_STAGE_MANY, stage_params(envelopes))

    async def failing(self, limit: int) -> list[FailingEvent]:
        rows = await self.session.execute(_FAILING, {"limit": limit})
        return [_failing(row) for row in rows.mappings()]

    async def count_failing(self) -> FailingCounts:
        row = (await self.session.execute(_COUNT_FAILING)).mappings().one()
        return FailingCounts(failing=row["failing"], backing_off=row["backing_off"])

    async def retry_failing(self, event_ids: Sequence[UUID] | None, limit: int) -> list[FailingEvent]:
        ids = None if event_ids is None else list(event_ids)
        rows = await self.session.execute(_RETRY_FAILING, {"ids": ids, "limit": limit})
        retried = [_failing(row) for row in sorted(rows.mappings(), key=lambda row: row["seq"])]
        if retried:  # wake the relays when this commits, as a staged event does
            await self.session.execute(_WAKE_RELAYS)
        return retried

    async def discard_failing(self, event_ids: Sequence[UUID]) -> list[FailingEvent]:
        rows = await self.session.execute(_DISCARD_FAILING, {"ids": list(event_ids)})
        discarded = [_failing(row) for row in rows.mappings()]
        if discarded:  # the events behind them may go now
            await self.session.execute(_WAKE_RELAYS)
        return discarded


class _PostgresBatch(OutboxBatch):
    def __init__(self, conn: DriverConnection, events: list[OutboxRecord], unreadable: list[UnreadableEvent]) -> None:
        self._conn = conn
        self._events = events
        self._unreadable = unreadable

    @property
    def events(self) -> Sequence[OutboxRecord]:
        return self._events

    @property
    def unreadable(self) -> Sequence[UnreadableEvent]:
        return self._unreadable

    async def mark_published(self, ids: Sequence[UUID]) -> None:
        if ids:
            await self._conn.execute(_MARK_PUBLISHED, {"ids": list(ids)})

    async def mark_failed(self, failures: Sequence[PublishFailure]) -> None:
        if failures:
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
            records: list[OutboxRecord] = []
            unreadable: list[UnreadableEvent] = []
            # The envelope comes as text and is parsed here, row by row (as the inbox's are): a
            # row the pool's codec could not decode (an integer of over 4,300 digits, JSON
            # nested too deep) fails alone, and so does one whose envelope names another
            # aggregate than its row (edited by hand), by which the claim orders it. Either holds
            # up its aggregate's younger events, as a failed publish does.
            oldest_outside: dict[tuple[str, str], int] = {}
            for row in rows:
                aggregate = (row["aggregate_type"], row["aggregate_id"])
                try:
                    record = OutboxRecord(row["id"], row["seq"], _envelope(row["envelope"]), row["attempts"])
                    if record.aggregate != aggregate:
                        raise ValueError(f"its envelope names the aggregate {record.aggregate}, its row {aggregate}")
                    records.append(record)
                except (ValueError, KeyError, TypeError, RecursionError) as error:
                    unreadable.append(UnreadableEvent(row["id"], row["attempts"], f"{type(error).__name__}: {error}"))
                    oldest_outside[aggregate] = min(row["seq"], oldest_outside.get(aggregate, row["seq"]))
            if records:
                aggregates = sorted({r.aggregate for r in records})
                outside = await conn.execute(
                    _OLDEST_OUTSIDE,
                    {
                        "types": [a[0] for a in aggregates],
                        "ids": [a[1] for a in aggregates],
                        "batch": [r.id for r in records],
                    },
                )
                for aggregate_type, aggregate_id, seq in outside.all():
                    aggregate = (aggregate_type, aggregate_id)
                    oldest_outside[aggregate] = min(seq, oldest_outside.get(aggregate, seq))
            yield _PostgresBatch(conn, publishable_in_order(records, oldest_outside), unreadable)

    async def wait_for_events(self, timeout: timedelta) -> None:
        if self.listener is None or not self.listener.connected:
            await asyncio.sleep(timeout.total_seconds())
            return
        await self.listener.wait(CHANNEL, "", timeout)

    async def purge_published(self, older_than: timedelta, batch_size: int) -> int:
        async with self.database.transaction() as conn:
            return await conn.affected(_PURGE, {"age": older_than.total_seconds(), "batch": batch_size})

    async def stats(self) -> OutboxStats:
        async with self.database.transaction() as conn:
            row = (await conn.execute(_STATS)).mappings().one()
        return OutboxStats(
            pending=row["pending"],
            oldest_pending_created_at=row["oldest"],
            failing=row["failing"],
            now=row["db_now"],
        )
