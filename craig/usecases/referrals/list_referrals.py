"""The intake queue: referrals of one status, most urgent first, one keyset page at a time."""

from __future__ import annotations

from typing import Final, Protocol

import attrs

from craig.domain.access import Principal, Role
from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.screening import QueueEntry, ReferralQuery, ResponseTimes, queue_entry
from craig.ports.clock import Clock
from craig.ports.intake import HasReferrals
from craig.ports.unit_of_work import UnitOfWork

#: Who works the intake queue; a case worker gets 403 on every referral route.
SCREENING_ROLES: Final = (Role.SUPERVISOR, Role.ADMIN, Role.SCREENER)


class ListReferralsWork(UnitOfWork, HasReferrals, Protocol):
    """The unit of work :class:`ListReferrals` uses."""


class ListReferrals:
    """403 for a case worker. ``wanted`` names status, priority and overdue; its clock and
    response times are replaced by this instance's."""

    def __init__(self, uow: ListReferralsWork, clock: Clock, times: ResponseTimes) -> None:
        self.uow = uow
        self.clock = clock
        self.times = times

    async def __call__(self, principal: Principal, wanted: ReferralQuery, keyset: Keyset) -> KeysetPage[QueueEntry]:
        principal.require(*SCREENING_ROLES)
        now = self.clock.now()
        query = attrs.evolve(wanted, now=now, times=self.times)
        async with self.uow:
            page = await self.uow.referrals.queue(query, keyset)
        return KeysetPage(
            items=[queue_entry(referral, self.times, now) for referral in page.items], next_after=page.next_after
        )
