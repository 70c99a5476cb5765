"""The partner rate limit, shared by every process through one PostgreSQL row per partner.

One statement per reservation, in the caller's transaction: it locks the partner's row,
computes the GCRA slots on the database clock (the SQL form of
:func:`craig.domain.partner_rate_limit.reserve`) and moves the theoretical arrival time past the
slots it grants. Concurrent workers queue on the row lock until the holder commits (its claim
transaction: milliseconds); none can ever grant a slot another already holds.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING
from uuid import UUID

from sqlalchemy import text

from craig.adapters.postgres.errors import db_errors
from craig.domain import partner_rate_limit as gcra
from craig.domain.partner_rate_limit import Reservation
from craig.ports.exchange import PartnerRateLimits

if TYPE_CHECKING:
    from craig.adapters.postgres.uow import PostgresUnitOfWork

_RESERVE = text(
    """
    WITH cur AS (
        SELECT key, greatest(tat, now()) AS base, now() AS db_now
          FROM exchange_rate_limits WHERE key = :key
           FOR UPDATE
    ), slots AS (
        SELECT key, base, extract(epoch FROM base - db_now)::float8 AS first_wait,
               CASE WHEN extract(epoch FROM base - db_now) > CAST(:max_wait AS float8) THEN 0
                    ELSE least(CAST(:count AS int),
                               floor((CAST(:max_wait AS float8) - extract(epoch FROM base - db_now)::float8)
                                     / CAST(:interval AS float8))::int + 1)
               END AS granted
          FROM cur
    )
    UPDATE exchange_rate_limits r
       SET tat = slots.base + make_interval(secs => slots.granted * CAST(:interval AS float8))
      FROM slots WHERE r.key = slots.key
    RETURNING slots.granted, slots.first_wait
    """
)
_CREATE = text("INSERT INTO exchange_rate_limits (key, tat) VALUES (:key, '-infinity') ON CONFLICT (key) DO NOTHING")


class PostgresPartnerRateLimits(PartnerRateLimits):
    def __init__(self, uow: PostgresUnitOfWork) -> None:
        self.uow = uow

    async def reserve(self, key: UUID, rate_per_minute: int, count: int, max_wait: timedelta) -> list[Reservation]:
        interval = gcra.interval_for(rate_per_minute)
        params = {
            "key": key,
            "count": count,
            "max_wait": max_wait.total_seconds(),
            "interval": interval.total_seconds(),
        }
        async with db_errors():
            conn = self.uow.connection
            row = (await conn.execute(_RESERVE, params)).first()
            if row is None:  # first use of this key
                await conn.execute(_CREATE, {"key": key})
                row = (await conn.execute(_RESERVE, params)).first()
        assert row is not None
        granted, first_wait = int(row[0]), timedelta(seconds=max(0.0, float(row[1])))
        return gcra.reservations(granted, count, first_wait, interval)
