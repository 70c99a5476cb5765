"""Use case: the send-job backlog, for operators (the gauges behind ``/metrics``).

Counts of jobs that pile up with history (sent, failed) are exact up to a bound and estimated
above it (:data:`craig.domain.constants.STATS_EXACT_COUNT_MAX_ROWS`), so a scrape costs the same
however long the history grows.
"""

from __future__ import annotations

from typing import Protocol

from craig.ports.exchange import HasSendJobs, SendJobStats
from craig.ports.unit_of_work import UnitOfWork


class SendJobBacklogWork(UnitOfWork, HasSendJobs, Protocol):
    """The unit of work :class:`SendJobBacklog` uses."""


class SendJobBacklog:
    """Jobs by status and when the oldest due job became due (database clock), for operators."""

    def __init__(self, uow: SendJobBacklogWork) -> None:
        self.uow = uow

    async def __call__(self) -> SendJobStats:
        async with self.uow:
            return await self.uow.send_jobs.stats()
