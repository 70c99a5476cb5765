"""The intake queue: referrals of one status, most urgent first, one keyset page at a time."""

from __future__ import annotations

from typing import Final, Protocol

from craig.domain.access import Principal, Role
from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.screening import QueueEntry, ReferralQuery, ReferralStatus, ResponseTimes, queue_entry
from craig.ports.clock import Clock
from craig.ports.intake import HasReferrals
from craig.ports.unit_of_work import UnitOfWork

#: Who works the intake queue; a case worker gets 403 on every referral route.
SCREENING_ROLES: Final = (Role.SUPERVISOR, Role.ADMIN, Role.SCREENER)


class ListReferralsWork(UnitOfWork, HasReferrals, Protocol):
    """The unit of work :class:`ListReferrals` uses."""


class ListReferrals:
    """403 for a case worker. ``overdue`` is judged on this instance's clock and response times."""

    def __init__(self, uow: ListReferralsWork, clock: Clock, times: ResponseTimes) -> None:
        self.uow = uow
        self.clock = clock
        self.times = times

    async def __call__(
        self,
        principal: Principal,
        keyset: Keyset,
        *,
        status: ReferralStatus = ReferralStatus.NEW,
        priority_rank: int | None = None,
        overdue: bool | None = None,
    ) -> KeysetPage[QueueEntry]:
        principal.require(*SCREENING_ROLES)
        now = self.clock.now()
        query = ReferralQuery(status=status, priority_rank=priority_rank, overdue=overdue, now=now, times=self.times)
        async with self.uow:
            page = await self.uow.referrals.queue(query, keyset)
        return KeysetPage(
            items=[queue_entry(referral, self.times, now) for referral in page.items], next_after=page.next_after
        )
