"""The intake queue: referrals of one status, most urgent first, one keyset page at a time."""

from __future__ import annotations

from typing import Final, Protocol

from craig.domain.access import Principal, Role
from craig.domain.audit import AuditAction
from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.screening import QueueEntry, ReferralQuery, ReferralStatus, ResponseTimes, queue_entry
from craig.ports.clock import Clock
from craig.ports.intake import HasReferrals
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import REFERRAL

#: Who works the intake queue; a case worker gets 403 on every referral route.
SCREENING_ROLES: Final = (Role.SUPERVISOR, Role.ADMIN, Role.SCREENER)


class ListReferralsWork(AuditWork, HasReferrals, Protocol):
    """The unit of work :class:`ListReferrals` uses."""


class ListReferrals:
    """403 for a case worker (recorded as ``denied``). ``overdue`` is judged on this instance's
    clock and response times. Recorded as one ``list`` entry with the ids returned, in the
    read's transaction."""

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
        async with refusals_recorded(self.uow, principal, AuditAction.LIST, REFERRAL):
            principal.require(*SCREENING_ROLES)
        now = self.clock.now()
        query = ReferralQuery(status=status, priority_rank=priority_rank, overdue=overdue, now=now, times=self.times)
        async with self.uow:
            page = await self.uow.referrals.queue(query, keyset)
            ids = [referral.id for referral in page.items]
            await record(self.uow, principal, AuditAction.LIST, REFERRAL, resource_ids=ids)
            await self.uow.commit()
        return KeysetPage(
            items=[queue_entry(referral, self.times, now) for referral in page.items], next_after=page.next_after
        )
