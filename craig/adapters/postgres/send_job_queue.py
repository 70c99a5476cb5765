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

The statement and every fragment of it live in :mod:`craig.adapters.postgres.send_job_pass`
(which also says why no pass can deadlock on a job row). The worker recovers expired leases in
a separate, rarer transaction (``SendJobRepository.recover_expired``).

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
from craig.adapters.postgres.raw import DedicatedConnection, RawStatement
from craig.adapters.postgres.send_job_pass import (
    GIVE_BACK,
    PASS,
    PLANNER_SETTINGS,
    job_from_row,
    pass_header,
    pass_params,
)
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.adapters.send_job_queue import SEND_JOBS_CHANNEL, JobWake, by_partner
from craig.domain import partner_rate_limit as gcra
from craig.domain.constants import SEND_PARTNER_CACHE_MAX_ENTRIES, SEND_PARTNER_CACHE_TTL
from craig.domain.partners import Partner
from craig.ports.cipher import FieldCipher
from craig.ports.exchange import Claim, JobOutcome, PassResult, SendJobQueue, UnusablePartner

log = structlog.get_logger(__name__)

_PARTNERS = RawStatement(GET_PARTNERS)

#: How the worker's connection shows in ``pg_stat_activity``.
APPLICATION_NAME = "craig-send-worker"

#: Decrypted partners are kept per queue this long (Craig never changes a partner, and key
#: rotation keeps the plaintext; the expiry bounds how long a row edited by hand goes unseen).


def listener_job_wake(listener: PostgresListener | None) -> JobWake:
    """Wake-ups from the NOTIFY on ``SEND_JOBS_CHANNEL`` (migration 0010) through ``listener``;
    while it is disconnected (or without one) the worker polls."""
    if listener is None:
        return JobWake()
    return JobWake(lambda: listener.subscribe(SEND_JOBS_CHANNEL), lambda: listener.connected)


class PostgresSendJobQueue(SendJobQueue):
    def __init__(self, database: PostgresDatabase, cipher: FieldCipher, wake: JobWake | None = None) -> None:
        """``wake``: what wakes an idle worker (:func:`listener_job_wake`); without it, it polls."""
        self._database = database
        self._cipher = cipher
        self._conn = DedicatedConnection(database, application_name=APPLICATION_NAME, **PLANNER_SETTINGS)
        self._wake = wake or JobWake()
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
        rows = await self._conn.fetch(PASS, pass_params(outcomes, claim, lease, max_rate_wait))
        recorded, busy = pass_header(rows)
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
            await self._conn.fetch(GIVE_BACK, params)
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
            if len(self._partners) >= SEND_PARTNER_CACHE_MAX_ENTRIES:
                self._partners.clear()
            for row in await self._conn.fetch(_PARTNERS, {"ids": list(missing)}):
                partner = usable_partner_from_row(row, self._cipher)
                found[partner.id] = partner
                if isinstance(partner, Partner):  # an unusable one is read again: a repair shows at once
                    self._partners[partner.id] = (partner, now + SEND_PARTNER_CACHE_TTL.total_seconds())
        return found
