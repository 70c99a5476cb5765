"""PostgreSQL adapters of the idempotency ports: an atomic INSERT-or-reclaim, with recovery of
dead claims, a fencing token and the owner's heartbeat. The database clock (``now()``) decides
expiry.

A stored response body is ciphertext (``RESPONSE_BODY``: the ASCII bytes of the field format in
the BYTEA column), NULL when there is none (``body_too_large``, or an empty body)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import BYTEA, JSONB
from sqlalchemy.sql import bindparam

from craig.adapters.postgres.counts import BoundedCount
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.notify import PostgresListener
from craig.adapters.postgres.session import PostgresSession
from craig.adapters.sealed_fields import RESPONSE_BODY
from craig.domain.constants import IDEMPOTENCY_ERROR_DETAIL_MAX_CHARS, STATS_EXACT_COUNT_MAX_ROWS
from craig.domain.idempotency import ClaimLost, ClaimRequest, Slot, SlotStatus, StoredResponse
from craig.ports.cipher import FieldCipher
from craig.ports.idempotency import (
    Claimed,
    ClaimOutcome,
    Existing,
    IdempotencySlots,
    IdempotencyStats,
    IdempotencyStore,
)

CHANNEL = "craig_idempotency"
_COLUMNS = """cache_key, method, path, user_sub, body_fingerprint, status, claim_token, slot_id, started_at,
              claim_expires_at, finished_at, status_code, headers, body, body_too_large, error_detail"""

# One statement, one round trip, its own transaction: the INSERT of a new slot, else the
# reclaim of a 'failed' slot or of a 'processing' one whose claim expired (its owner died: a live
# owner keeps extending it; either way the fencing token moves on and slot_id stays), else the
# slot as it is. All three parts read one snapshot, taken when the
# statement starts, and the last one cannot see what the first two wrote: hence NOT EXISTS.
# ``claimed`` says whether the slot is the caller's now. A
# slot that another transaction inserts and commits while this one waits for its key is in no
# part of the answer (no row at all): the caller asks again. This statement owns the reclaim
# rule; craig.domain.idempotency.decide_claim mirrors it for the memory adapter, and
# tests/contract/test_idempotency_reclaim.py holds both to the same cases.
_CLAIM = text(
    f"""
    WITH inserted AS (
        INSERT INTO idempotency_responses
            (cache_key, method, path, user_sub, body_fingerprint, status, slot_id, started_at, claim_expires_at)
        VALUES (:cache_key, :method, :path, :user_sub, :fingerprint, 'processing', :slot_id, now(),
                now() + make_interval(secs => :ttl))
        ON CONFLICT (cache_key) DO NOTHING
        RETURNING {_COLUMNS}
    ), reclaimed AS (
        UPDATE idempotency_responses
           SET status            = 'processing',
               started_at        = now(),
               claim_expires_at  = now() + make_interval(secs => :ttl),
               finished_at       = NULL,
               status_code       = NULL,
               headers           = NULL,
               body              = NULL,
               body_too_large    = false,
               error_detail      = NULL,
               body_fingerprint  = :fingerprint,
               claim_token       = claim_token + 1
         WHERE cache_key = :cache_key
           AND body_fingerprint = :fingerprint
           AND (status = 'failed' OR (status = 'processing' AND claim_expires_at <= now()))
           AND NOT EXISTS (SELECT 1 FROM inserted)
        RETURNING {_COLUMNS}
    )
    SELECT {_COLUMNS}, now() AS db_now, true AS claimed FROM inserted
    UNION ALL
    SELECT {_COLUMNS}, now(), true FROM reclaimed
    UNION ALL
    SELECT {_COLUMNS}, now(), false FROM idempotency_responses
     WHERE cache_key = :cache_key AND NOT EXISTS (SELECT 1 FROM inserted) AND NOT EXISTS (SELECT 1 FROM reclaimed)
    """
)
_EXTEND = text(
    """
    UPDATE idempotency_responses
       SET claim_expires_at = now() + make_interval(secs => :ttl)
     WHERE cache_key = :cache_key AND claim_token = :token AND status = 'processing'
    RETURNING cache_key
    """
)
_SELECT = text(f"SELECT {_COLUMNS}, now() AS db_now FROM idempotency_responses WHERE cache_key = :cache_key")
_NOW = text("SELECT now()")
# A finalize wakes the waiters of its key (LISTEN craig_idempotency) in the same statement: the
# notification is delivered when, and only if, the transaction commits.
_FINALIZE_SUCCEEDED = text(
    """
    WITH done AS (
        UPDATE idempotency_responses
           SET status = 'succeeded', finished_at = now(), status_code = :status_code,
               headers = :headers, body = :body, body_too_large = :body_too_large
         WHERE cache_key = :cache_key AND claim_token = :token AND status = 'processing'
        RETURNING cache_key
    )
    SELECT pg_notify('craig_idempotency', cache_key) FROM done
    """
).bindparams(bindparam("headers", type_=JSONB), bindparam("body", type_=BYTEA))
_FINALIZE_FAILED = text(
    """
    WITH done AS (
        UPDATE idempotency_responses
           SET status = 'failed', finished_at = now(), error_detail = :detail
         WHERE cache_key = :cache_key AND claim_token = :token AND status = 'processing'
        RETURNING cache_key
    )
    SELECT pg_notify('craig_idempotency', cache_key) FROM done
    """
)
_PURGE = text(
    """
    DELETE FROM idempotency_responses
     WHERE cache_key IN (
        SELECT cache_key FROM idempotency_responses
         WHERE started_at < now() - make_interval(secs => :age)
           AND (status <> 'processing' OR claim_expires_at <= now())
         LIMIT :batch)
    """
)
# ``processing`` slots are live (few, through their partial index); finished ones pile up until
# their retention ends, so they are counted bounded (``counts.py``), never by a whole-table scan.
_STATS = text(
    """
    SELECT count(*) AS processing, min(started_at) AS oldest, now() AS db_now
      FROM idempotency_responses WHERE status = 'processing'
    """
)
_FINISHED_COUNTS = {
    "succeeded": BoundedCount("idempotency_responses", "status = 'succeeded'", "started_at"),
    "failed": BoundedCount("idempotency_responses", "status = 'failed'", "started_at"),
}


def _slot(row: Mapping[Any, Any], cipher: FieldCipher) -> Slot:
    response = None
    if row["status_code"] is not None:
        stored = row["body"]
        body = b"" if stored is None else cipher.decrypt_bytes(bytes(stored), RESPONSE_BODY.context(row["cache_key"]))
        response = StoredResponse(
            status_code=row["status_code"],
            headers=tuple((str(k), str(v)) for k, v in (row["headers"] or [])),
            body=body,
            body_too_large=row["body_too_large"],
        )
    return Slot(
        cache_key=row["cache_key"],
        method=row["method"],
        path=row["path"],
        user_sub=row["user_sub"],
        fingerprint=row["body_fingerprint"],
        status=SlotStatus(row["status"]),
        claim_token=row["claim_token"],
        slot_id=row["slot_id"],
        started_at=row["started_at"],
        claim_expires_at=row["claim_expires_at"],
        finished_at=row["finished_at"],
        response=response,
        error_detail=row["error_detail"],
    )


class PostgresIdempotencyStore(IdempotencyStore):
    def __init__(
        self, database: PostgresDatabase, cipher: FieldCipher, listener: PostgresListener | None = None
    ) -> None:
        self.database = database
        self.cipher = cipher
        self.listener = listener

    async def try_claim(self, request: ClaimRequest, ttl: timedelta) -> ClaimOutcome:
        params = {
            "cache_key": request.cache_key,
            "method": request.method,
            "path": request.path,
            "user_sub": request.user_sub,
            "fingerprint": request.fingerprint,
            "slot_id": request.slot_id,
            "ttl": ttl.total_seconds(),
        }
        while True:
            async with self.database.connect() as conn:
                row = (await conn.execute(_CLAIM, params)).first()
            if row is not None:
                slot = _slot(row, self.cipher)
                return Claimed(slot) if row["claimed"] else Existing(slot, row["db_now"])
            # Inserted by another transaction that committed after this statement's snapshot
            # was taken (or purged meanwhile): ask again, in a new snapshot.

    async def extend_claim(self, cache_key: str, token: int, ttl: timedelta) -> bool:
        async with self.database.connect() as conn:
            params = {"cache_key": cache_key, "token": token, "ttl": ttl.total_seconds()}
            return (await conn.execute(_EXTEND, params)).first() is not None

    async def get(self, cache_key: str) -> tuple[Slot | None, datetime]:
        async with self.database.connect() as conn:
            row = (await conn.execute(_SELECT, {"cache_key": cache_key})).first()
            if row is None:
                return None, (await conn.execute(_NOW)).scalar_one()
            return _slot(row, self.cipher), row["db_now"]

    async def finalize_failed(self, cache_key: str, token: int, detail: str) -> bool:
        params = {"cache_key": cache_key, "token": token, "detail": detail[:IDEMPOTENCY_ERROR_DETAIL_MAX_CHARS]}
        async with self.database.connect() as conn:
            return (await conn.execute(_FINALIZE_FAILED, params)).first() is not None

    async def wait_for_change(self, cache_key: str, timeout: timedelta) -> None:
        if self.listener is None or not self.listener.connected:
            # No LISTEN connection: the caller's polling (its timeout) is the fallback.
            await asyncio.sleep(timeout.total_seconds())
            return
        await self.listener.wait(CHANNEL, cache_key, timeout)

    async def purge(self, older_than: timedelta, batch_size: int) -> int:
        async with self.database.transaction() as conn:
            return await conn.affected(_PURGE, {"age": older_than.total_seconds(), "batch": batch_size})

    async def stats(self) -> IdempotencyStats:
        async with self.database.transaction() as conn:
            live = (await conn.execute(_STATS)).mappings().one()
            counts = {"processing": live["processing"]}
            for status, count in _FINISHED_COUNTS.items():
                counts[status] = await count.run(conn, STATS_EXACT_COUNT_MAX_ROWS)
        return IdempotencyStats(
            by_status={status: n for status, n in counts.items() if n},
            oldest_processing_started_at=live["oldest"],
            now=live["db_now"],
        )


class PostgresIdempotencySlots(IdempotencySlots):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    async def finalize_succeeded(self, cache_key: str, token: int, response: StoredResponse) -> None:
        conn = await self.session.connection()
        body = (
            self.session.cipher.encrypt_bytes(response.body, RESPONSE_BODY.context(cache_key))
            if response.body
            else None
        )
        done = (
            await conn.execute(
                _FINALIZE_SUCCEEDED,
                {
                    "cache_key": cache_key,
                    "token": token,
                    "status_code": response.status_code,
                    "headers": [list(pair) for pair in response.headers],
                    "body": body,
                    "body_too_large": response.body_too_large,
                },
            )
        ).first()
        if done is None:
            raise ClaimLost("the idempotency claim was recovered by another request before finalize")
