"""PostgreSQL adapter of the send-job repository (``exchange_send_jobs``).

Claims are ``FOR UPDATE SKIP LOCKED`` so workers never block on each other; every time is
``now()`` (the database clock). Outcomes of a whole batch are recorded in ONE statement,
fenced by ``lease_token`` so a worker whose lease was taken over cannot overwrite the new owner.
The claim and the recording are the worker's one-statement pass's own fragments
(:mod:`craig.adapters.postgres.send_job_pass`), so the two always do the same.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import ARRAY, TEXT
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.sql import bindparam

from craig.adapters.postgres.counts import BoundedCount
from craig.adapters.postgres.send_job_pass import (
    CLAIM_SET,
    COLUMNS,
    DUE,
    JSON_DOCUMENT,
    OUTCOMES,
    RECORD_SET,
    RECORD_WHERE,
    RETURNING,
    job_from_row,
    record_params,
)
from craig.adapters.postgres.session import PostgresSession
from craig.adapters.sealed_fields import SEND_JOB_PAYLOAD, seal_json
from craig.adapters.telemetry import current_origin, job_origin
from craig.domain import exchange as model
from craig.domain.constants import STATS_EXACT_COUNT_MAX_ROWS
from craig.domain.exchange import AttemptDecision, JobStatus, SendJob
from craig.ports.cipher import FieldCipher
from craig.ports.errors import InvalidData
from craig.ports.exchange import SendJobRepository, SendJobStats

UUIDS = ARRAY(PG_UUID(as_uuid=True))

#: Shared with the benchmark's one-statement producer (``bench/send_jobs.py``). The jobs arrive as
#: one JSON document of one object a job (:func:`add_params`), as the worker's pass gets its
#: outcomes: asyncpg checks and encodes an array parameter element by element, seven arrays a
#: batch, where msgspec writes the document in one call (``bench.send_job_producer``).
ADD = """
    INSERT INTO exchange_send_jobs (id, transaction_id, partner_id, correlation_id, payload, origin_request_id,
                                    traceparent)
    SELECT u.id, u.transaction_id, u.partner_id, u.correlation_id, u.payload, u.origin_request_id, u.traceparent
      FROM jsonb_to_recordset(CAST(:jobs AS jsonb))
        AS u(id uuid, transaction_id uuid, partner_id uuid, correlation_id uuid, payload text, origin_request_id text,
             traceparent text)
    """
_ADD = text(ADD).bindparams(bindparam("jobs", type_=TEXT))
_GET = text(f"SELECT {COLUMNS} FROM exchange_send_jobs WHERE id = :id")
_FOR_TRANSACTION = text(f"SELECT {COLUMNS} FROM exchange_send_jobs WHERE transaction_id = :id ORDER BY created_at, id")
_CLAIM = text(
    f"""
    WITH due AS ({DUE})
    UPDATE exchange_send_jobs j
       SET {CLAIM_SET}
      FROM due WHERE j.id = due.id
    RETURNING {RETURNING}
    """
).bindparams(bindparam("exclude", type_=UUIDS))
_EXPIRED = text(
    f"""
    SELECT {COLUMNS} FROM exchange_send_jobs
     WHERE status = 'in_flight' AND lease_expires_at <= now()
     ORDER BY lease_expires_at
     LIMIT :limit
       FOR UPDATE SKIP LOCKED
    """
)
_RECORD = text(
    f"UPDATE exchange_send_jobs j SET {RECORD_SET} FROM {OUTCOMES} WHERE {RECORD_WHERE} RETURNING {RETURNING}"
).bindparams(bindparam("outcomes", type_=TEXT))
_DEFER = text(
    """
    UPDATE exchange_send_jobs
       SET status = 'pending', attempts = greatest(attempts - 1, 0), lease_expires_at = NULL,
           next_attempt_at = now() + make_interval(secs => :wait)
     WHERE id = :id AND lease_token = :token AND status = 'in_flight'
    RETURNING id
    """
)
_RETRY_FAILED = text(
    f"""
    UPDATE exchange_send_jobs j
       SET status = 'pending', attempts = 0, next_attempt_at = now(), completed_at = NULL,
           lease_token = j.lease_token + 1
     WHERE j.id = :id AND j.status = 'failed'
    RETURNING {RETURNING}
    """
)
# Newest first, backwards along the partial index on failed jobs (migration 0013).
_FAILED = text(
    f"""
    SELECT {COLUMNS} FROM exchange_send_jobs WHERE status = 'failed'
     ORDER BY completed_at DESC, id DESC LIMIT :limit
    """
)
# Operators' counts: the live states through their partial indexes, exactly; the states that
# pile up with history through a bounded count (``counts.py``), never the whole table.
_LIVE_STATS = text(
    """
    SELECT (SELECT count(*) FROM exchange_send_jobs WHERE status = 'pending') AS pending,
           (SELECT count(*) FROM exchange_send_jobs WHERE status = 'in_flight') AS in_flight,
           (SELECT min(next_attempt_at) FROM exchange_send_jobs
             WHERE status = 'pending' AND next_attempt_at <= now()) AS oldest_due,
           (SELECT min(lease_expires_at) FROM exchange_send_jobs
             WHERE status = 'in_flight' AND lease_expires_at <= now()) AS oldest_expired_lease,
           now() AS db_now
    """
)
# Sent jobs have no index of their own (every delivery would pay for one): the primary key walks
# them, and they are nearly every row it meets.
_HISTORY_COUNTS = {
    JobStatus.SENT: BoundedCount("exchange_send_jobs", "status = 'sent'", "id"),
    JobStatus.FAILED: BoundedCount("exchange_send_jobs", "status = 'failed'", "completed_at"),
}


def add_params(jobs: Sequence[SendJob], cipher: FieldCipher) -> dict[str, str]:
    """The parameter of :data:`ADD`: a row a job, its payload encrypted for its row, stamped with
    the request's id and trace context (:func:`craig.adapters.telemetry.job_origin`)."""
    rows, stamp = [], current_origin()
    for job in jobs:
        origin = job_origin(job, stamp)
        rows.append(
            {
                "id": job.id,
                "transaction_id": job.transaction_id,
                "partner_id": job.partner_id,
                "correlation_id": job.correlation_id,
                "payload": seal_json(cipher, SEND_JOB_PAYLOAD, job.id, job.payload),
                "origin_request_id": origin.origin_request_id,
                "traceparent": origin.traceparent,
            }
        )
    try:
        return {"jobs": JSON_DOCUMENT.encode(rows).decode()}
    except UnicodeEncodeError:  # a lone surrogate in a request id or trace context
        raise InvalidData("a send job's request id or trace context is not valid text") from None


class PostgresSendJobRepository(SendJobRepository):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    async def _rows(self, statement: Any, params: Mapping[str, Any]) -> list[SendJob]:
        result = await self.session.execute(statement, params)
        return [job_from_row(row, self.session.cipher) for row in result.mappings()]

    async def add_many(self, jobs: Sequence[SendJob]) -> None:
        if not jobs:
            return
        await self.session.execute(_ADD, add_params(jobs, self.session.cipher))

    async def get(self, job_id: UUID) -> SendJob | None:
        rows = await self._rows(_GET, {"id": job_id})
        return rows[0] if rows else None

    async def for_transaction(self, transaction_id: UUID) -> list[SendJob]:
        return await self._rows(_FOR_TRANSACTION, {"id": transaction_id})

    async def claim_due(self, limit: int, lease: timedelta, exclude: Collection[UUID] = ()) -> list[SendJob]:
        params = {"limit": limit, "lease": lease.total_seconds(), "exclude": list(exclude)}
        claimed = await self._rows(_CLAIM, params)
        return sorted(claimed, key=lambda j: (j.next_attempt_at, j.id))

    async def recover_expired(self, max_attempts: int, limit: int) -> list[SendJob]:
        expired = await self._rows(_EXPIRED, {"limit": limit})
        return await self.record([(job, model.decide_lease_expired(job.attempts, max_attempts)) for job in expired])

    async def record(self, outcomes: Sequence[tuple[SendJob, AttemptDecision]]) -> list[SendJob]:
        if not outcomes:
            return []
        return await self._rows(_RECORD, record_params(outcomes))

    async def defer(self, job: SendJob, wait: timedelta) -> bool:
        params = {"id": job.id, "token": job.lease_token, "wait": wait.total_seconds()}
        return (await self.session.execute(_DEFER, params)).first() is not None

    async def retry_failed(self, job_id: UUID) -> SendJob | None:
        rows = await self._rows(_RETRY_FAILED, {"id": job_id})
        return rows[0] if rows else None

    async def failed(self, limit: int) -> list[SendJob]:
        return await self._rows(_FAILED, {"limit": limit})

    async def stats(self) -> SendJobStats:
        conn = await self.session.connection()
        live = (await conn.execute(_LIVE_STATS)).mappings().one()
        counts = {str(JobStatus.PENDING): live["pending"], str(JobStatus.IN_FLIGHT): live["in_flight"]}
        for status, count in _HISTORY_COUNTS.items():
            counts[str(status)] = await count.run(conn, STATS_EXACT_COUNT_MAX_ROWS)
        by_status = {status: n for status, n in counts.items() if n}
        return SendJobStats(
            by_status=by_status,
            oldest_due_at=live["oldest_due"],
            now=live["db_now"],
            oldest_expired_lease_at=live["oldest_expired_lease"],
        )
