"""One referral of the intake queue."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.errors import NotFound
from craig.domain.screening import QueueEntry, ResponseTimes, queue_entry
from craig.ports.clock import Clock
from craig.ports.intake import HasReferrals
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import REFERRAL
from craig.usecases.referrals.list_referrals import SCREENING_ROLES


class GetReferralWork(AuditWork, HasReferrals, Protocol):
    """The unit of work :class:`GetReferral` uses."""


class GetReferral:
    """403 for a case worker (before looking it up), 404 for an unknown id (both recorded as
    ``denied``). The read is recorded (``read``, with the case of a screened-in referral) in its
    transaction."""

    def __init__(self, uow: GetReferralWork, clock: Clock, times: ResponseTimes) -> None:
        self.uow = uow
        self.clock = clock
        self.times = times

    async def __call__(self, principal: Principal, referral_id: UUID) -> QueueEntry:
        async with refusals_recorded(self.uow, principal, AuditAction.READ, REFERRAL, referral_id):
            principal.require(*SCREENING_ROLES)
            async with self.uow:
                referral = await self.uow.referrals.get(referral_id)
                if referral is None:
                    raise NotFound("referral", referral_id)
                await record(self.uow, principal, AuditAction.READ, REFERRAL, referral.id, case_id=referral.case_id)
                await self.uow.commit()
        return queue_entry(referral, self.times, self.clock.now())
