"""The shared rate limiter on PostgreSQL: one GCRA row per bucket, one statement per hit.

The upsert takes the bucket's row lock, so concurrent hits from any instance are serialized; the
arithmetic is :func:`craig.domain.rate_limit.gcra` in SQL, on the database clock.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import text

from craig.adapters.postgres.database import PostgresDatabase
from craig.domain.rate_limit import RateDecision, emission_interval
from craig.ports.rate_limit import RateLimiter

_HIT = text(
    """
    INSERT INTO intake_rate_limits AS b (bucket, tat)
    VALUES (:bucket, now() + make_interval(secs => :interval))
    ON CONFLICT (bucket) DO UPDATE
       SET tat = greatest(b.tat, now()) + make_interval(secs => :interval)
     WHERE greatest(b.tat, now()) + make_interval(secs => :interval) - now()
           <= make_interval(secs => :window)
    RETURNING tat
    """
)
_RETRY_AFTER = text(
    """
    SELECT extract(epoch FROM greatest(tat, now()) + make_interval(secs => :interval) - now()
                              - make_interval(secs => :window))
      FROM intake_rate_limits WHERE bucket = :bucket
    """
)
_PURGE = text(
    """
    DELETE FROM intake_rate_limits WHERE bucket IN (
        SELECT bucket FROM intake_rate_limits WHERE tat < now() - make_interval(secs => :age) LIMIT :batch)
    """
)


class PostgresRateLimiter(RateLimiter):
    def __init__(self, database: PostgresDatabase) -> None:
        self.database = database

    async def hit(self, bucket: str, limit: int, window: timedelta) -> RateDecision:
        params = {
            "bucket": bucket,
            "interval": emission_interval(limit, window).total_seconds(),
            "window": window.total_seconds(),
        }
        async with self.database.transaction() as conn:
            if (await conn.execute(_HIT, params)).first() is not None:
                return RateDecision(True, timedelta(0))
            wait = (await conn.execute(_RETRY_AFTER, params)).scalar_one()
        return RateDecision(False, timedelta(seconds=max(0.0, float(wait))))

    async def purge_idle(self, older_than: timedelta, batch_size: int) -> int:
        async with self.database.transaction() as conn:
            return await conn.affected(_PURGE, {"age": older_than.total_seconds(), "batch": batch_size})
