"""The send-job worker's pass on PostgreSQL: ONE statement, so one round trip and no BEGIN/COMMIT.

Record the finished outcomes (fenced by lease token) and stage the events of those recorded,
claim due jobs (``FOR UPDATE SKIP LOCKED``, leased), and reserve every claimed partner's
rate-limit slots (rows locked in ascending key order, the same GCRA as
:mod:`craig.adapters.postgres.partner_rate_limit`). A single statement is atomic on its own, and
it holds the partner's rate-limit row only from the reservation to its end, so workers queue on
that row for microseconds instead of for a transaction's round trips. Partners come from a
short-lived cache of decrypted partners, loaded on the same connection when missing.

The statement runs straight on one asyncpg connection the worker keeps (``raw.py``): through
SQLAlchemy's pool, its checkout and greenlet hops cost more Python per pass than the pass's own
work (measured with cProfile while developing).

The statement's parts all see one snapshot: a job recorded here is still ``in_flight`` to the
claim, which never takes one of the outcomes' jobs anyway. The worker recovers expired leases
in a separate, rarer transaction (``SendJobRepository.recover_expired``).

No pass ever waits for a job row, so passes cannot deadlock on them: the claim skips locked rows,
and so does the recording. That matters because a concurrent claim whose snapshot still saw a
job as ``pending`` locks its row before it re-checks (and rejects) it, and keeps that lock to the
end of its statement; an outcome whose row is held like that comes back as ``busy`` and the
worker records it in its next pass. The only wait is on rate-limit rows, taken last and in key
order.

Why: a pass used to take seven round trips (BEGIN, record, stage, claim, partners, reserve,
COMMIT), and the rate-limit row lock was held across the last two, serialising every worker of
a partner; ``bench/send_jobs.py`` measures the difference.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any
from uuid import UUID

import structlog

from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.exchange import GET_PARTNERS, usable_partner_from_row
from craig.adapters.postgres.notify import PostgresListener
from craig.adapters.postgres.outbox import stage_params
from craig.adapters.postgres.partner_rate_limit import RESERVE_CTES
from craig.adapters.postgres.raw import DedicatedConnection, RawStatement
from craig.adapters.postgres.send_jobs import (
    CLAIM_SET,
    DUE,
    OUTCOMES,
    RECORD_SET,
    RECORD_WHERE,
    RETURNING,
    job_from_row,
    record_params,
)
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.adapters.send_job_queue import SEND_JOBS_CHANNEL, JobWake, by_partner
from craig.domain import partner_rate_limit as gcra
from craig.domain.constants import DEFAULT_PARTNER_RATE_LIMIT_RPM
from craig.domain.partners import Partner
from craig.ports.cipher import FieldCipher
from craig.ports.exchange import Claim, JobOutcome, PassResult, SendJobQueue, UnusablePartner

log = structlog.get_logger(__name__)

_PARTNERS = RawStatement(GET_PARTNERS)
_PASS = RawStatement(
    f"""
    WITH present AS (
        SELECT id FROM exchange_send_jobs WHERE id = ANY(CAST(:ids AS uuid[]))
    ), free AS (
        SELECT id FROM exchange_send_jobs WHERE id = ANY(CAST(:ids AS uuid[])) FOR UPDATE SKIP LOCKED
    ), recorded AS (
        UPDATE exchange_send_jobs j
           SET {RECORD_SET}
          FROM {OUTCOMES}
         WHERE {RECORD_WHERE} AND j.id IN (SELECT id FROM free)
        RETURNING j.id
    ), staged AS (
        INSERT INTO event_outbox (id, envelope, event_type, aggregate_type, aggregate_id)
        SELECT e.id, e.envelope, e.event_type, e.aggregate_type, e.aggregate_id
          FROM unnest(CAST(:event_jobs AS uuid[]), CAST(:event_ids AS uuid[]), CAST(:envelopes AS jsonb[]),
                      CAST(:types AS text[]), CAST(:aggregate_types AS text[]), CAST(:aggregate_ids AS text[]))
               WITH ORDINALITY AS e(job_id, id, envelope, event_type, aggregate_type, aggregate_id, n)
         WHERE e.job_id IN (SELECT id FROM recorded)
         ORDER BY e.n
        RETURNING 1
    ), due AS ({DUE}
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
    SELECT (SELECT coalesce(array_agg(id), '{{}}') FROM recorded) AS recorded,
           (SELECT coalesce(array_agg(id), '{{}}') FROM present WHERE id NOT IN (SELECT id FROM free)) AS busy,
           c.*, r.granted, r.first_wait
      FROM (SELECT 1) AS one
      LEFT JOIN claimed c ON true
      LEFT JOIN reserved r ON r.key = c.partner_id
    """
)

#: Claimed jobs the pass cannot hand over go back unsent: ``pending``, due now, the attempt undone.
_GIVE_BACK = RawStatement(
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
#: (Seen with auto_explain in the throughput benchmark while developing.) These settings,
#: on this connection only, leave the planner the index paths it should always take.
_PLANNER = {"enable_seqscan": "off", "enable_bitmapscan": "off"}

#: How the worker's connection shows in ``pg_stat_activity``.
APPLICATION_NAME = "craig-send-worker"

#: Decrypted partners are kept per queue this long (Craig never changes a partner, and key
#: rotation keeps the plaintext; the expiry bounds how long a row edited by hand goes unseen).
_PARTNER_CACHE_SECONDS = 30.0
_PARTNER_CACHE_SIZE = 1024


class PostgresSendJobQueue(SendJobQueue):
    def __init__(
        self, database: PostgresDatabase, cipher: FieldCipher, listener: PostgresListener | None = None
    ) -> None:
        self._database = database
        self._cipher = cipher
        self._conn = DedicatedConnection(database, application_name=APPLICATION_NAME, **_PLANNER)
        self._wake = (
            JobWake(lambda: listener.subscribe(SEND_JOBS_CHANNEL), lambda: listener.connected)
            if listener is not None
            else JobWake()
        )
        self._partners: dict[UUID, tuple[Partner, float]] = {}

    async def wait_for_jobs(self, timeout: timedelta) -> bool:
        return await self._wake.wait(timeout)

    async def connect(self) -> None:
        """Open the worker's connection now rather than on its first pass."""
        await self._conn.connect()

    async def aclose(self) -> None:
        await self._conn.aclose()

    async def run_pass(
        self, outcomes: Sequence[JobOutcome], claim: int, lease: timedelta, max_rate_wait: timedelta
    ) -> PassResult:
        if claim > 0:
            self._wake.clear()
        events = [(o.job.id, o.event) for o in outcomes if o.event is not None]
        params: dict[str, Any] = {
            **record_params([(o.job, o.decision) for o in outcomes]),
            **stage_params([event for _, event in events], as_text=True),
            "event_jobs": [job_id for job_id, _ in events],
            "exclude": [o.job.id for o in outcomes],
            "limit": claim,
            "lease": lease.total_seconds(),
            "max_wait": max_rate_wait.total_seconds(),
            "default_rpm": DEFAULT_PARTNER_RATE_LIMIT_RPM,
        }
        rows = await self._conn.fetch(_PASS, params)
        recorded, busy = frozenset(rows[0]["recorded"]), frozenset(rows[0]["busy"])
        claimed = [row for row in rows if row["id"] is not None]
        try:
            claims = await self._claims(claimed, max_rate_wait)
        except Exception as error:
            # The statement has committed the claims: hand them back now rather than leave them
            # in flight until their leases run out (which would cost each an attempt).
            log.error("send-job pass could not hand over its claims; giving them back", error=repr(error))
            await self._give_back(claimed)
            claims = []
        return PassResult(recorded, claims, busy)

    async def _give_back(self, rows: Sequence[Mapping[str, Any]]) -> None:
        params = {"ids": [row["id"] for row in rows], "tokens": [row["lease_token"] for row in rows]}
        try:
            await self._conn.fetch(_GIVE_BACK, params)
        except Exception as error:  # the leases bring them back
            log.warning("giving back claimed send jobs failed", jobs=len(rows), error=str(error))

    async def _claims(self, rows: Sequence[Mapping[str, Any]], max_rate_wait: timedelta) -> list[Claim]:
        jobs = {row["id"]: job_from_row(row, self._cipher) for row in rows}
        partners = await self._partners_of({row["partner_id"] for row in rows})
        grants = {row["partner_id"]: (row["granted"], row["first_wait"]) for row in rows}
        claims: list[Claim] = []
        for partner_id, group in by_partner(jobs.values()).items():
            partner = partners.get(partner_id)
            if not isinstance(partner, Partner):
                unusable = partner.reason if partner is not None else None
                claims += [Claim(job, None, unusable=unusable) for job in group]
                continue
            granted, first_wait = grants[partner_id]
            if granted is None:  # the partner's first use: its rate-limit row is made here
                slots = await self._first_reservation(partner, len(group), max_rate_wait)
            else:
                interval = gcra.interval_for(partner.effective_rate_limit_rpm)
                wait = timedelta(seconds=max(0.0, float(first_wait)))
                slots = gcra.reservations(int(granted), len(group), wait, interval)
            claims += [Claim(job, partner, slot) for job, slot in zip(group, slots, strict=True)]
        claims.sort(key=lambda c: (c.job.next_attempt_at, c.job.id))
        return claims

    async def _first_reservation(self, partner: Partner, count: int, max_wait: timedelta) -> list[gcra.Reservation]:
        uow = PostgresUnitOfWork(self._database, self._cipher)
        async with uow:
            slots = await uow.partner_rate_limits.reserve(partner.id, partner.effective_rate_limit_rpm, count, max_wait)
            await uow.commit()
        return slots

    async def _partners_of(self, ids: set[UUID]) -> dict[UUID, Partner | UnusablePartner]:
        now = time.monotonic()
        found: dict[UUID, Partner | UnusablePartner] = {
            i: self._partners[i][0] for i in ids if i in self._partners and self._partners[i][1] > now
        }
        missing = ids - found.keys()
        if missing:
            if len(self._partners) >= _PARTNER_CACHE_SIZE:
                self._partners.clear()
            for row in await self._conn.fetch(_PARTNERS, {"ids": list(missing)}):
                partner = usable_partner_from_row(row, self._cipher)
                found[partner.id] = partner
                if isinstance(partner, Partner):  # an unusable one is read again: a repair shows at once
                    self._partners[partner.id] = (partner, now + _PARTNER_CACHE_SECONDS)
        return found
