"""Retention: purge expired idempotency slots, published outbox rows, processed inbox rows,
broadcast inbox rows left by instances that are gone, and delivered exchange transactions.

Each pass deletes at most one batch per table, so a purge never holds long locks; a full batch
means there is more to do and the worker runs again at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta

import attrs

#: ``purge(older_than, batch_size) -> rows deleted``
Purge = Callable[[timedelta, int], Awaitable[int]]


@attrs.frozen
class Retention:
    name: str
    purge: Purge
    older_than: timedelta


class PurgeExpired:
    def __init__(self, retentions: Sequence[Retention], batch_size: int) -> None:
        self.retentions = retentions
        self.batch_size = batch_size

    async def run_once(self) -> bool:
        """One batch per table; True when some table had a full batch (more remains)."""
        more = False
        for retention in self.retentions:
            deleted = await retention.purge(retention.older_than, self.batch_size)
            more = more or deleted >= self.batch_size
        return more
