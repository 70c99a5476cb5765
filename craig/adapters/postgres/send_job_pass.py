"""The SQL of the send-job worker's one-statement pass, and every fragment of it.

This module owns the statement :class:`~craig.adapters.postgres.send_job_queue.PostgresSendJobQueue`
runs and the parts it is made of: a job's columns (and how a row of them reads), the claim of due
jobs, the recording of outcomes fenced by lease token, the staging of their events and the GCRA
reservation of rate-limit slots. Repository statements that do the same step on their own (the
send-job repository's claim and record, the rate limiter's reserve, the outbox's per-aggregate
locks) import the fragment from here, so the pass and the repositories cannot drift apart.

The statement's parts all see one snapshot: a job recorded here is still ``in_flight`` to the
claim, which never takes one of the outcomes' jobs anyway.

No pass ever waits for a job row, so passes cannot deadlock on them: the claim skips locked rows,
and so does the recording. That matters because a concurrent claim whose snapshot still saw a
job as ``pending`` locks its row before it re-checks (and rejects) it, and keeps that lock to the
end of its statement; an outcome whose row is held like that comes back as ``busy`` and the
worker records it in its next pass. The waits are on rate-limit rows, taken last and in key
order, and on the outbox's per-aggregate lock of a recorded job, which the pass takes before
its events draw their ``seq``, as every outbox writer does: another transaction holds it only
while it has staged an event for the same job and not yet committed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any
from uuid import UUID

import msgspec

from craig.adapters.postgres.raw import RawStatement
from craig.adapters.sealed_fields import SEND_JOB_PAYLOAD, unseal_json
from craig.adapters.telemetry import Origin, current_origin, stamped
from craig.domain.constants import DEFAULT_PARTNER_RATE_LIMIT_RPM, SEND_JOB_ERROR_MAX_CHARS
from craig.domain.events import EventEnvelope
from craig.domain.exchange import AttemptDecision, JobStatus, SendJob
from craig.ports.cipher import FieldCipher
from craig.ports.exchange import JobOutcome

# --- a job's columns -------------------------------------------------------------------------
COLUMNS = """id, transaction_id, partner_id, correlation_id, payload, status, attempts, last_error,
    next_attempt_at, created_at, completed_at, lease_expires_at, lease_token, origin_request_id, traceparent"""
RETURNING = ", ".join(f"j.{c.strip()}" for c in COLUMNS.split(","))


def job_from_row(row: Mapping[Any, Any], cipher: FieldCipher) -> SendJob:
    """The job, its payload decrypted (a payload that does not decrypt raises when it is used,
    so one bad row never fails the jobs read with it)."""
    return SendJob(
        id=row["id"],
        transaction_id=row["transaction_id"],
        partner_id=row["partner_id"],
        correlation_id=row["correlation_id"],
        payload=unseal_json(cipher, SEND_JOB_PAYLOAD, row["id"], row["payload"]),
        status=JobStatus(row["status"]),
        attempts=row["attempts"],
        last_error=row["last_error"],
        next_attempt_at=row["next_attempt_at"],
        created_at=row["created_at"],
        completed_at=row["completed_at"],
        lease_expires_at=row["lease_expires_at"],
        lease_token=row["lease_token"],
        origin_request_id=row["origin_request_id"],
        traceparent=row["traceparent"],
    )


# --- the claim: ``FOR UPDATE SKIP LOCKED``, leased on the database clock -----------------------
CLAIM_SET = """status = 'in_flight', attempts = j.attempts + 1, lease_token = j.lease_token + 1,
           lease_expires_at = now() + make_interval(secs => :lease)"""
_DUE = """
        SELECT id FROM exchange_send_jobs
         WHERE status = 'pending' AND next_attempt_at <= now() AND id <> ALL({exclude})
         ORDER BY next_attempt_at
         LIMIT :limit
           FOR UPDATE SKIP LOCKED"""
#: Due jobs but those of ``:exclude`` (a ``uuid[]``).
DUE = _DUE.format(exclude="CAST(:exclude AS uuid[])")

# --- the recording -------------------------------------------------------------------------------
# The SQL form of craig.domain.exchange.decided over outcomes ``o`` (the memory adapter runs the
# function itself); a job is updated only while it carries the claim's lease token.
#: The outcomes ``o``, from one JSON document of one object an outcome (:func:`record_params`), not
#: from an array a column: asyncpg checks and encodes every element of an array parameter one by
#: one, which cost about a sixth of the send worker's CPU per job (counted with
#: ``bench.send_job_cpu``), where msgspec writes a document in one call.
OUTCOMES = """jsonb_to_recordset(CAST(:outcomes AS jsonb))
                   AS o(id uuid, token bigint, status text, retry_in float8, error text)"""
RECORD_SET = """status = o.status,
           next_attempt_at = CASE WHEN o.status = 'pending'
                                  THEN now() + make_interval(secs => o.retry_in)
                                  ELSE j.next_attempt_at END,
           completed_at = CASE WHEN o.status = 'pending' THEN NULL ELSE now() END,
           last_error = CASE WHEN o.status = 'sent' THEN NULL ELSE o.error END,
           lease_expires_at = NULL"""
RECORD_WHERE = "j.id = o.id AND j.lease_token = o.token AND j.status IN ('in_flight', 'pending')"


def record_params(outcomes: Sequence[tuple[SendJob, AttemptDecision]]) -> dict[str, str]:
    """The parameter of :data:`OUTCOMES`: a row an outcome, the job's id and lease token and
    what was decided."""
    rows = [
        {
            "id": job.id,
            "token": job.lease_token,
            "status": str(decision.status),
            "retry_in": _retry_in(decision),
            "error": _error(decision),
        }
        for job, decision in outcomes
    ]
    return {"outcomes": JSON_DOCUMENT.encode(rows).decode()}


def _retry_in(decision: AttemptDecision) -> float:
    return (decision.retry_in or timedelta(0)).total_seconds()


def _error(decision: AttemptDecision) -> str | None:
    return (decision.error or "")[:SEND_JOB_ERROR_MAX_CHARS] or None


# --- the events' outbox rows ---------------------------------------------------------------------
#: The JSON documents of the pass and of the enqueue (``send_jobs.py``): the same JSON as
#: json.dumps, several times faster.
JSON_DOCUMENT = msgspec.json.Encoder()

#: The outbox writers' per-aggregate lock key (``pg_advisory_xact_lock``, bigint key space): every
#: statement that inserts into ``event_outbox`` takes it for each aggregate it stages, before the
#: row draws its ``seq``, and holds it to COMMIT, so one aggregate's events are numbered in the
#: order their transactions commit (see :mod:`craig.adapters.postgres.outbox`).
AGGREGATE_LOCK_KEY = "hashtextextended('craig.outbox:' || {type} || '/' || {id}, 0)"


def aggregate_locks(aggregates: str) -> str:
    """A one-row SELECT that takes the lock of every distinct aggregate ``(t, i)`` of the
    ``aggregates`` relation, in key order (so two stagers of the same aggregates cannot
    deadlock). As a MATERIALIZED CTE that the INSERT reads from, it runs to its end before the
    first row reaches the INSERT."""
    key = AGGREGATE_LOCK_KEY.format(type="a.t", id="a.i")
    return f"""SELECT count(pg_advisory_xact_lock(k.key)) AS n
          FROM (SELECT DISTINCT {key} AS key FROM {aggregates} ORDER BY 1) AS k"""


# --- the rate-limit reservation ------------------------------------------------------------------
# The GCRA of craig.domain.partner_rate_limit.reserve over a ``demand(key, n, step)`` CTE: lock
# the keys' rows in ascending order, grant each key up to ``n`` consecutive slots ``step`` seconds
# apart that start within ``:max_wait``, move its ``tat`` past them. A key without a row yet gets
# nothing from ``reserved``.
# "Now" is the database clock once the rows are locked (clock_timestamp()), not the statement's
# start (now()): a statement that queued behind another for the lock would otherwise see that
# one's slots as still in the future and wait for nothing.
RESERVE_CTES = """
    locked AS (
        SELECT r.key, r.tat, d.n, d.step
          FROM exchange_rate_limits r JOIN demand d ON d.key = r.key
         ORDER BY r.key
           FOR UPDATE OF r
    ), stamped AS (
        SELECT locked.*, clock_timestamp() AS at FROM locked OFFSET 0
    ), waits AS (
        SELECT key, greatest(tat, at) AS base, n, step,
               extract(epoch FROM greatest(tat, at) - at)::float8 AS first_wait
          FROM stamped
    ), grants AS (
        SELECT key, base, step, first_wait,
               CASE WHEN first_wait > CAST(:max_wait AS float8) THEN 0
                    ELSE least(n, floor((CAST(:max_wait AS float8) - first_wait) / step)::int + 1)
               END AS granted
          FROM waits
    ), reserved AS (
        UPDATE exchange_rate_limits r
           SET tat = g.base + make_interval(secs => g.granted * g.step)
          FROM grants g WHERE r.key = g.key
        RETURNING g.key, g.granted, g.first_wait
    )"""

# --- the pass --------------------------------------------------------------------------------------
#: The pass's events arrive as a JSON document too (:func:`pass_params`), as its outcomes do.
_EVENTS_DOCUMENT = """ROWS FROM (jsonb_to_recordset(CAST(:events AS jsonb))
                   AS (job_id uuid, id uuid, envelope jsonb, type text, aggregate_type text, aggregate_id text))
                   WITH ORDINALITY AS e(job_id, id, envelope, type, aggregate_type, aggregate_id, n)"""
#: The aggregates of the events of the recorded outcomes: the pass locks them as every outbox
#: writer does, so an event it stages and one a concurrent transaction stages for the same job
#: are numbered in commit order. Only the pass that recorded a job stages its event, and it holds
#: the job's row (``free``), so passes never wait on each other for these locks.
STAGED_AGGREGATES = """(SELECT job_id, aggregate_type AS t, aggregate_id AS i FROM events) AS a
                WHERE a.job_id IN (SELECT id FROM recorded)"""
#: Record, stage (under the aggregates' locks), claim, reserve. One row per claimed job (one row
#: of NULLs when none), each with its partner's grant (``granted`` NULL: the partner has no
#: rate-limit row yet); exactly one of the rows (see :func:`pass_header`) also carries the arrays
#: of the recorded and the busy outcomes' ids, the others NULL there (sent once, not once a row).
PASS = RawStatement(
    f"""
    WITH outcomes AS MATERIALIZED (
        SELECT * FROM {OUTCOMES}
    ), events AS MATERIALIZED (
        SELECT * FROM {_EVENTS_DOCUMENT}
    ), free AS (
        SELECT id FROM exchange_send_jobs WHERE id = ANY(ARRAY(SELECT id FROM outcomes)) FOR UPDATE SKIP LOCKED
    ), held AS (
        -- Outcomes whose rows another transaction holds (not those whose rows are gone): looked
        -- up only for the outcomes the pass could not lock, nearly always none.
        SELECT id FROM exchange_send_jobs
         WHERE id = ANY(ARRAY(SELECT id FROM outcomes WHERE id NOT IN (SELECT id FROM free)))
    ), recorded AS (
        UPDATE exchange_send_jobs j
           SET {RECORD_SET}
          FROM outcomes o
         WHERE {RECORD_WHERE} AND j.id IN (SELECT id FROM free)
        RETURNING j.id
    ), stage_locks AS MATERIALIZED (
        {aggregate_locks(STAGED_AGGREGATES)}
    ), staged AS (
        INSERT INTO event_outbox (id, envelope, event_type, aggregate_type, aggregate_id)
        SELECT e.id, e.envelope, e.type, e.aggregate_type, e.aggregate_id
          FROM stage_locks, events e
         WHERE e.job_id IN (SELECT id FROM recorded)
         ORDER BY e.n
        RETURNING 1
    ), due AS ({_DUE.format(exclude="ARRAY(SELECT id FROM outcomes)")}
    ), claimed AS (
        UPDATE exchange_send_jobs j
           SET {CLAIM_SET}
          FROM due WHERE j.id = due.id
        RETURNING {RETURNING}
    ), demand AS (
        SELECT c.partner_id AS key, count(*)::int AS n,
               60.0::float8 / coalesce(p.rate_limit_rpm, CAST(:default_rpm AS int)) AS step
          FROM claimed c JOIN partners p ON p.id = c.partner_id
         -- Record and stage BEFORE the rate-limit rows are locked, so they are held only for
         -- the reservation itself and the commit (otherwise PostgreSQL runs them last).
         WHERE (SELECT count(*) FROM staged) >= 0
         GROUP BY c.partner_id, p.rate_limit_rpm
    ), {RESERVE_CTES}
    SELECT CASE WHEN row_number() OVER () = 1
                THEN (SELECT coalesce(array_agg(id), '{{}}') FROM recorded) END AS recorded,
           CASE WHEN row_number() OVER () = 1
                THEN (SELECT coalesce(array_agg(id), '{{}}') FROM held) END AS busy,
           c.*, r.granted, r.first_wait
      FROM (SELECT 1) AS one
      LEFT JOIN claimed c ON true
      LEFT JOIN reserved r ON r.key = c.partner_id
    """
)


def pass_header(rows: Sequence[Mapping[str, Any]]) -> tuple[frozenset[Any], frozenset[Any]]:
    """The ids of the recorded and of the busy outcomes, from the one row of :data:`PASS`'s
    result that carries them."""
    header = next(row for row in rows if row["recorded"] is not None)
    return frozenset(header["recorded"]), frozenset(header["busy"])


def _event_row(job_id: UUID, event: EventEnvelope, origin: Origin | None) -> dict[str, Any]:
    """One row of the pass's events document: the event, stamped as every outbox writer stamps
    it (:func:`craig.adapters.telemetry.stamped`), and the job whose outcome it tells."""
    event = stamped(event, origin)
    return {
        "job_id": job_id,
        "id": event.id,
        "envelope": event.to_json(),
        "type": event.type,
        "aggregate_type": event.aggregate_type,
        "aggregate_id": event.aggregate_id,
    }


def pass_params(
    outcomes: Sequence[JobOutcome], claim: int, lease: timedelta, max_rate_wait: timedelta
) -> dict[str, Any]:
    """The parameters of :data:`PASS`: record ``outcomes`` (staging the event of each one
    recorded), claim up to ``claim`` other jobs leased for ``lease``, reserve within
    ``max_rate_wait``. The outcomes (as :func:`record_params` gives them) and their events,
    stamped as every outbox writer stamps them, go as two JSON documents of one object a row."""
    events = [(o.job.id, o.event) for o in outcomes if o.event is not None]
    origin = current_origin() if events else None  # read once, and only for something to stamp
    event_rows = [_event_row(job_id, event, origin) for job_id, event in events]
    return {
        **record_params([(o.job, o.decision) for o in outcomes]),
        "events": JSON_DOCUMENT.encode(event_rows).decode(),
        "limit": claim,
        "lease": lease.total_seconds(),
        "max_wait": max_rate_wait.total_seconds(),
        "default_rpm": DEFAULT_PARTNER_RATE_LIMIT_RPM,
    }


#: Claimed jobs a pass cannot hand over go back unsent: ``pending``, due now, the attempt undone.
GIVE_BACK = RawStatement(
    """
    UPDATE exchange_send_jobs j
       SET status = 'pending', attempts = greatest(j.attempts - 1, 0), lease_expires_at = NULL,
           next_attempt_at = now()
      FROM unnest(CAST(:ids AS uuid[]), CAST(:tokens AS bigint[])) AS g(id, token)
     WHERE j.id = g.id AND j.lease_token = g.token AND j.status = 'in_flight'
    """
)

#: The pass reaches every row by key or through the drainable index, in order. asyncpg keeps the
#: statement prepared, and PostgreSQL soon switches it to a generic plan made from the table's
#: statistics at that moment: made while the queue was small, such a plan may pick a sequential
#: scan (or a bitmap scan and a sort of every due job), which turns each pass into O(queue).
#: (Seen with auto_explain in the throughput benchmark while developing.) These settings, on the
#: pass's connection only, leave the planner the index paths it should always take.
PLANNER_SETTINGS = {"enable_seqscan": "off", "enable_bitmapscan": "off"}
