"""One referral of the intake queue."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.errors import NotFound
from craig.domain.screening import QueueEntry, ResponseTimes, queue_entry
from craig.ports.clock import Clock
from craig.ports.intake import HasReferrals
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.referrals.list_referrals import SCREENING_ROLES


class GetReferralWork(UnitOfWork, HasReferrals, Protocol):
    """The unit of work :class:`GetReferral` uses."""


class GetReferral:
    """403 for a case worker (before looking it up), 404 for an unknown id."""

    def __init__(self, uow: GetReferralWork, clock: Clock, times: ResponseTimes) -> None:
        self.uow = uow
        self.clock = clock
        self.times = times

    async def __call__(self, principal: Principal, referral_id: UUID) -> QueueEntry:
        principal.require(*SCREENING_ROLES)
        async with self.uow:
            referral = await self.uow.referrals.get(referral_id)
        if referral is None:
            raise NotFound("referral", referral_id)
        return queue_entry(referral, self.times, self.clock.now())
