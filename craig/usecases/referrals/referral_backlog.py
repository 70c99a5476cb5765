"""The unscreened referrals per priority, for ``/metrics`` and ``craig status``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from craig.domain.screening import QueueReport, ResponseTimes
from craig.ports.clock import Clock
from craig.ports.intake import HasReferrals
from craig.ports.unit_of_work import UnitOfWork


class ReferralBacklogWork(UnitOfWork, HasReferrals, Protocol):
    """The unit of work :class:`ReferralBacklog` uses."""


class ReferralBacklog:
    """Every priority, most urgent first, zero counts included; a short read transaction of its
    own on the index of unscreened referrals."""

    def __init__(self, uow_factory: Callable[[], ReferralBacklogWork], clock: Clock, times: ResponseTimes) -> None:
        self.uow_factory = uow_factory
        self.clock = clock
        self.times = times

    async def __call__(self) -> QueueReport:
        now = self.clock.now()
        async with self.uow_factory() as uow:
            return QueueReport(now=now, priorities=tuple(await uow.referrals.backlog(self.times, now)))
