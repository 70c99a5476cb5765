"""Re-make every family name's blind index under the newest field key (``craig keys rotate``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import attrs

from craig.ports.cases import HasCases
from craig.ports.unit_of_work import UnitOfWork


class ReindexFamilyNamesWork(UnitOfWork, HasCases, Protocol):
    """The unit of work :class:`ReindexFamilyNames` uses, one per batch."""


@attrs.frozen
class ReindexReport:
    scanned: int
    #: Indexes still not under the newest key (undecryptable names, or written meanwhile by an
    #: instance on the old ring). Zero means the old key is no longer needed for searching.
    remaining: int


class ReindexFamilyNames:
    """Batches of ``batch_size`` cases, each its own short transaction, in id order; safe to
    interrupt and run again (an index already under the newest key is skipped)."""

    def __init__(self, uow_factory: Callable[[], ReindexFamilyNamesWork], batch_size: int) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self.uow_factory = uow_factory
        self.batch_size = batch_size

    async def __call__(self) -> ReindexReport:
        scanned, after = 0, None
        while True:
            async with self.uow_factory() as uow:
                count, last = await uow.cases.reindex_family_names(after, self.batch_size)
                await uow.commit()
            scanned += count
            if count < self.batch_size:
                break
            after = last
        return ReindexReport(scanned=scanned, remaining=await self._remaining())

    async def _remaining(self) -> int:
        async with self.uow_factory() as uow:
            return await uow.cases.count_stale_family_name_indexes()
