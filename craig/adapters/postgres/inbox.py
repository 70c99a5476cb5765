"""PostgreSQL adapters of the inbox ports (``event_inbox`` with its retry semantics)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import structlog
from sqlalchemy import text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TEXT
from sqlalchemy.sql import bindparam

from craig.adapters.postgres.counts import BoundedCount
from craig.adapters.postgres.database import PostgresDatabase, json_value
from craig.adapters.postgres.session import PostgresSession
from craig.domain.constants import STATS_EXACT_COUNT_MAX_ROWS
from craig.domain.events import EventEnvelope
from craig.ports.inbox import InboxRecord, InboxRepository, InboxStats, InboxStore
from craig.ports.messaging import UNROUTED

log = structlog.get_logger(__name__)

# The envelope comes as text and is parsed by _record, so a row whose JSON cannot be decoded
# (nested past the parser's depth, say) fails only itself, never the rows read with it.
_COLUMNS = """consumer, event_id, envelope::text AS envelope, queue, received_at, processed_at, failed_at, error_count,
              last_error, first_failed_at, next_attempt_at"""

_BEGIN = text(
    f"""
    INSERT INTO event_inbox (consumer, event_id, envelope, queue, attempt_started_at)
    VALUES (:consumer, :event_id, :envelope, :queue, now())
    ON CONFLICT (consumer, event_id) DO UPDATE SET attempt_started_at = now()
    RETURNING {_COLUMNS}
    """
).bindparams(bindparam("envelope", type_=JSONB))
_PROCESSED = text("UPDATE event_inbox SET processed_at = now() WHERE consumer = :consumer AND event_id = :event_id")
_FAILURE = text(
    f"""
    UPDATE event_inbox
       SET error_count = error_count + 1,
           last_error = :error,
           first_failed_at = coalesce(first_failed_at, now()),
           failed_at = CASE WHEN CAST(:retry_in AS float8) IS NULL THEN now() END,
           -- from now, not from the start of the transaction the handler ran in
           next_attempt_at = clock_timestamp() + make_interval(secs => coalesce(CAST(:retry_in AS float8), 0))
     WHERE consumer = :consumer AND event_id = :event_id
    RETURNING {_COLUMNS}
    """
)
_DISCARD_DEAD = text(
    "DELETE FROM event_inbox WHERE consumer = :consumer AND event_id = :event_id AND failed_at IS NOT NULL "
    "RETURNING event_id"
)
_DEAD_LETTER = text(
    """
    UPDATE event_inbox
       SET failed_at = now(), last_error = :error, error_count = error_count + 1,
           first_failed_at = coalesce(first_failed_at, now())
     WHERE consumer = :consumer AND event_id = :event_id AND processed_at IS NULL AND failed_at IS NULL
    RETURNING event_id
    """
)
_RESET = text(
    """
    UPDATE event_inbox
       SET error_count = 0, failed_at = NULL, next_attempt_at = now()
     WHERE consumer = :consumer AND event_id = :event_id AND processed_at IS NULL
    RETURNING event_id
    """
)
_ENQUEUE = text(
    """
    INSERT INTO event_inbox (consumer, event_id, envelope, queue)
    VALUES (:consumer, :event_id, :envelope, :queue)
    ON CONFLICT (consumer, event_id) DO NOTHING
    RETURNING event_id
    """
).bindparams(bindparam("envelope", type_=JSONB))
_CLAIM = text(
    f"""
    UPDATE event_inbox i
       SET next_attempt_at = now() + make_interval(secs => :lease)
      FROM (SELECT consumer, event_id FROM event_inbox
             WHERE consumer = ANY(:consumers) AND processed_at IS NULL AND failed_at IS NULL
               AND next_attempt_at <= now()
             ORDER BY received_at, event_id
             LIMIT :limit
               FOR UPDATE SKIP LOCKED) due
     WHERE i.consumer = due.consumer AND i.event_id = due.event_id
    RETURNING {", ".join("i." + c.strip() for c in _COLUMNS.split(","))}
    """
).bindparams(bindparam("consumers", type_=ARRAY(TEXT)))
_DEAD = text(
    f"""SELECT {_COLUMNS} FROM event_inbox WHERE failed_at IS NOT NULL
        ORDER BY received_at, event_id LIMIT :limit"""
)
# Retrying rows are live (through the in-flight partial index); dead and processed rows pile up
# with history, so they are counted bounded (``counts.py``), never by a whole-table scan.
_STATS = text(
    """
    SELECT count(*) AS retrying FROM event_inbox
     WHERE processed_at IS NULL AND failed_at IS NULL AND error_count > 0
    """
)
_DEAD_COUNT = BoundedCount("event_inbox", "failed_at IS NOT NULL", "failed_at")
_PROCESSED_COUNT = BoundedCount("event_inbox", "processed_at IS NOT NULL", "processed_at")
# In the order of idx_event_inbox_due (an unrouted row's next_attempt_at is its arrival).
_WAITING_ROWS = text(
    f"""SELECT {_COLUMNS} FROM event_inbox
         WHERE consumer = :consumer AND processed_at IS NULL AND failed_at IS NULL
         ORDER BY next_attempt_at, event_id LIMIT :limit"""
)
_WAITING_ROWS_AFTER = text(
    f"""SELECT {_COLUMNS} FROM event_inbox
         WHERE consumer = :consumer AND processed_at IS NULL AND failed_at IS NULL
           AND (next_attempt_at, event_id) > (:after_due, :after_id)
         ORDER BY next_attempt_at, event_id LIMIT :limit"""
)
_DELETE_WAITING = text(
    "DELETE FROM event_inbox WHERE consumer = :consumer AND event_id = :event_id "
    "AND processed_at IS NULL AND failed_at IS NULL RETURNING event_id"
)
_WAITING = text(
    "SELECT count(*) FROM event_inbox WHERE consumer = :consumer AND processed_at IS NULL AND failed_at IS NULL"
)
# Unrouted rows are never attempted: their next_attempt_at is their arrival (idx_event_inbox_due).
_PURGE = text(
    """
    DELETE FROM event_inbox WHERE (consumer, event_id) IN (
        SELECT consumer, event_id FROM (
            (SELECT consumer, event_id FROM event_inbox
              WHERE processed_at IS NOT NULL AND processed_at < now() - make_interval(secs => :age)
              LIMIT :batch)
            UNION ALL
            (SELECT consumer, event_id FROM event_inbox
              WHERE consumer = :unrouted AND processed_at IS NULL AND failed_at IS NULL
                AND next_attempt_at < now() - make_interval(secs => :age)
              LIMIT :batch)
        ) AS expired
        LIMIT :batch)
    """
)

# Rows under the per-instance keys of the broadcast consumers ``:consumers``: for each consumer,
# one range of the partial indexes of broadcast keys (migration 0015; ``<consumer>@`` up to
# ``<consumer>A``, '@' and 'A' being adjacent bytes, in byte order), unprocessed rows received
# long ago and dead letters dead-lettered long ago. The indexes hold no row of a durable
# consumer, so the old dead letters those keep (until an operator replays or purges them) are
# never read: a pass reads the old rows it deletes and the young rows of the same keys.
_BROADCAST_KEYS = """strpos(consumer, '@') > 0 AND consumer COLLATE "C" >= b.name || '@'
                 AND consumer COLLATE "C" < b.name || 'A' AND starts_with(consumer, b.name || '@')"""
PURGE_BROADCAST = text(
    f"""
    DELETE FROM event_inbox WHERE (consumer, event_id) IN (
        (SELECT w.consumer, w.event_id FROM unnest(:consumers) AS b(name)
          CROSS JOIN LATERAL (
                SELECT consumer, event_id FROM event_inbox
                 WHERE processed_at IS NULL AND failed_at IS NULL AND {_BROADCAST_KEYS}
                   AND received_at < now() - make_interval(secs => :age)
                 LIMIT :batch) w
          LIMIT :batch)
        UNION ALL
        (SELECT d.consumer, d.event_id FROM unnest(:consumers) AS b(name)
          CROSS JOIN LATERAL (
                SELECT consumer, event_id FROM event_inbox
                 WHERE failed_at IS NOT NULL AND {_BROADCAST_KEYS}
                   AND failed_at < now() - make_interval(secs => :age)
                 LIMIT :batch) d
          LIMIT :batch))
    """
).bindparams(bindparam("consumers", type_=ARRAY(TEXT)))


def _record(row: Mapping[Any, Any]) -> InboxRecord:
    """The row; its envelope None when it is not one this version can read (written by another
    version, or by hand), so one such row never fails the rows read with it."""
    raw = row["envelope"]
    try:
        envelope = EventEnvelope.from_json(json_value(raw)) if raw else None
    except (ValueError, KeyError, TypeError, RecursionError) as error:
        log.warning(
            "an inbox row's envelope cannot be read",
            consumer=row["consumer"],
            event_id=str(row["event_id"]),
            error=f"{type(error).__name__}: {error}"[:200],
        )
        envelope = None
    return InboxRecord(
        consumer=row["consumer"],
        event_id=row["event_id"],
        envelope=envelope,
        queue=row["queue"],
        received_at=row["received_at"],
        processed_at=row["processed_at"],
        failed_at=row["failed_at"],
        error_count=row["error_count"],
        last_error=row["last_error"],
        first_failed_at=row["first_failed_at"],
        next_attempt_at=row["next_attempt_at"],
    )


def _params(consumer: str, envelope: EventEnvelope, queue: str) -> dict[str, Any]:
    return {"consumer": consumer, "event_id": envelope.id, "envelope": envelope.to_json(), "queue": queue}


class PostgresInboxRepository(InboxRepository):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    async def begin_attempt(self, consumer: str, envelope: EventEnvelope, queue: str) -> InboxRecord:
        row = (await self.session.execute(_BEGIN, _params(consumer, envelope, queue))).mappings().one()
        return _record(row)

    async def mark_processed(self, consumer: str, event_id: UUID) -> None:
        await self.session.execute(_PROCESSED, {"consumer": consumer, "event_id": event_id})

    async def record_failure(
        self, consumer: str, event_id: UUID, error: str, *, retry_in: timedelta | None
    ) -> InboxRecord:
        params = {
            "consumer": consumer,
            "event_id": event_id,
            "error": error,
            "retry_in": None if retry_in is None else retry_in.total_seconds(),
        }
        row = (await self.session.execute(_FAILURE, params)).mappings().one()
        return _record(row)

    async def reset_for_replay(self, consumer: str, event_id: UUID) -> bool:
        row = (await self.session.execute(_RESET, {"consumer": consumer, "event_id": event_id})).first()
        return row is not None


class PostgresInboxStore(InboxStore):
    def __init__(self, database: PostgresDatabase) -> None:
        self.database = database

    async def enqueue(self, consumer: str, envelope: EventEnvelope, queue: str) -> bool:
        async with self.database.transaction() as conn:
            return (await conn.execute(_ENQUEUE, _params(consumer, envelope, queue))).first() is not None

    async def claim_due(self, consumers: Sequence[str], limit: int, lease: timedelta) -> list[InboxRecord]:
        params = {"consumers": list(consumers), "limit": limit, "lease": lease.total_seconds()}
        async with self.database.transaction() as conn:
            rows = (await conn.execute(_CLAIM, params)).mappings().all()
        return sorted((_record(r) for r in rows), key=lambda r: (r.received_at, r.event_id))

    async def dead_letters(self, limit: int) -> list[InboxRecord]:
        async with self.database.transaction() as conn:
            return [_record(r) for r in (await conn.execute(_DEAD, {"limit": limit})).mappings()]

    async def dead_letter(self, consumer: str, event_id: UUID, error: str) -> bool:
        params = {"consumer": consumer, "event_id": event_id, "error": error}
        async with self.database.transaction() as conn:
            return (await conn.execute(_DEAD_LETTER, params)).first() is not None

    async def discard_dead(self, consumer: str, event_id: UUID) -> bool:
        async with self.database.transaction() as conn:
            found = await conn.execute(_DISCARD_DEAD, {"consumer": consumer, "event_id": event_id})
            return found.first() is not None

    async def waiting_rows(
        self, consumer: str, limit: int, *, after: tuple[datetime, UUID] | None = None
    ) -> list[InboxRecord]:
        async with self.database.transaction() as conn:
            if after is None:
                rows = await conn.execute(_WAITING_ROWS, {"consumer": consumer, "limit": limit})
            else:
                params = {"consumer": consumer, "limit": limit, "after_due": after[0], "after_id": after[1]}
                rows = await conn.execute(_WAITING_ROWS_AFTER, params)
            return [_record(r) for r in rows.mappings()]

    async def delete_waiting(self, consumer: str, event_id: UUID) -> bool:
        async with self.database.transaction() as conn:
            found = await conn.execute(_DELETE_WAITING, {"consumer": consumer, "event_id": event_id})
            return found.first() is not None

    async def waiting(self, consumer: str) -> int:
        async with self.database.transaction() as conn:
            return int((await conn.execute(_WAITING, {"consumer": consumer})).scalar_one())

    async def stats(self) -> InboxStats:
        async with self.database.transaction() as conn:
            retrying = (await conn.execute(_STATS)).scalar_one()
            dead = await _DEAD_COUNT.run(conn, STATS_EXACT_COUNT_MAX_ROWS)
            processed = await _PROCESSED_COUNT.run(conn, STATS_EXACT_COUNT_MAX_ROWS)
        return InboxStats(retrying=retrying, dead=dead, processed=processed)

    async def purge_processed(self, older_than: timedelta, batch_size: int) -> int:
        async with self.database.transaction() as conn:
            params = {"age": older_than.total_seconds(), "batch": batch_size, "unrouted": UNROUTED}
            return await conn.affected(_PURGE, params)

    async def purge_broadcast(self, consumers: Sequence[str], older_than: timedelta, batch_size: int) -> int:
        if not consumers:
            return 0
        params = {"consumers": list(consumers), "age": older_than.total_seconds(), "batch": batch_size}
        async with self.database.transaction() as conn:
            return await conn.affected(PURGE_BROADCAST, params)
