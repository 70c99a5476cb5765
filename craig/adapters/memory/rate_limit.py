"""Memory twin of the shared rate limiter: the same GCRA decision over a memory table."""

from __future__ import annotations

from datetime import timedelta

from craig.adapters.memory.database import MemoryDatabase
from craig.domain.rate_limit import RateDecision, gcra
from craig.ports.rate_limit import RateLimiter

TABLE = "intake_rate_limits"


class MemoryRateLimiter(RateLimiter):
    """Each hit is its own memory transaction: never call it inside an open unit of work."""

    def __init__(self, db: MemoryDatabase) -> None:
        self.db = db

    async def hit(self, bucket: str, limit: int, window: timedelta) -> RateDecision:
        async with self.db.transaction() as tx:
            decision, tat = gcra(tx.get(TABLE, bucket), self.db.now(), limit, window)
            if tat is not None:
                tx.put(TABLE, bucket, tat)
            return decision

    async def purge_idle(self, older_than: timedelta, batch_size: int) -> int:
        async with self.db.transaction() as tx:
            cutoff = self.db.now() - older_than
            idle = [bucket for bucket, tat in self.db.raw(TABLE).items() if tat < cutoff][:batch_size]
            for bucket in idle:
                tx.delete(TABLE, bucket)
            return len(idle)
