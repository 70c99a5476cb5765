"""The partner rate limit, shared by every process through one PostgreSQL row per partner.

One statement per reservation, in the caller's transaction: it locks the partner's row,
computes the GCRA slots on the database clock (the SQL form of
:func:`craig.domain.partner_rate_limit.reserve`) and moves the theoretical arrival time past the
slots it grants. Concurrent workers queue on the row lock until the holder commits (its claim
transaction: milliseconds); none can ever grant a slot another already holds.
"""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

from sqlalchemy import text

from craig.adapters.postgres.send_job_pass import RESERVE_CTES
from craig.adapters.postgres.session import PostgresSession
from craig.domain import partner_rate_limit as gcra
from craig.domain.partner_rate_limit import Reservation
from craig.ports.exchange import PartnerRateLimits

# The GCRA is the send-job pass's own fragment, over a one-key ``demand``.
_RESERVE = text(
    f"""
    WITH demand AS (
        SELECT CAST(:key AS uuid) AS key, CAST(:count AS int) AS n, CAST(:interval AS float8) AS step
    ), {RESERVE_CTES}
    SELECT granted, first_wait FROM reserved
    """
)
_CREATE = text("INSERT INTO exchange_rate_limits (key, tat) VALUES (:key, '-infinity') ON CONFLICT (key) DO NOTHING")


class PostgresPartnerRateLimits(PartnerRateLimits):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    async def reserve(self, key: UUID, rate_per_minute: int, count: int, max_wait: timedelta) -> list[Reservation]:
        interval = gcra.interval_for(rate_per_minute)
        params = {
            "key": key,
            "count": count,
            "max_wait": max_wait.total_seconds(),
            "interval": interval.total_seconds(),
        }
        conn = await self.session.connection()
        row = (await conn.execute(_RESERVE, params)).first()
        if row is None:  # first use of this key
            await conn.execute(_CREATE, {"key": key})
            row = (await conn.execute(_RESERVE, params)).first()
        assert row is not None
        granted, first_wait = int(row[0]), timedelta(seconds=max(0.0, float(row[1])))
        return gcra.reservations(granted, count, first_wait, interval)
