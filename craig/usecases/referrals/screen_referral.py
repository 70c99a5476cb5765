"""Screen a referral: in (open a case for it, maybe assign a worker) or out (with a reason).

One transaction: the referral is locked (``FOR UPDATE``), so concurrent screenings of one
referral run one after the other and every one after the first finds it screened (409
``referral-already-screened``, naming who and when). The partial unique index on
``cases.referral_id`` is the second guard: no referral ever has two cases.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

import attrs

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.cases import Case, new_case
from craig.domain.errors import NotFound
from craig.domain.event_catalogue import CASE_ASSIGNED, CASE_OPENED, EventType
from craig.domain.screening import QueueEntry, ResponseTimes, queue_entry, screen_in, screen_out
from craig.domain.versions import IfMatch
from craig.ports.cases import HasCases
from craig.ports.clock import Clock
from craig.ports.intake import HasReferrals
from craig.ports.outbox import HasOutbox
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import REFERRAL
from craig.usecases.events import new_event, stage_events
from craig.usecases.facts import stage_facts
from craig.usecases.ids import new_id
from craig.usecases.referrals.list_referrals import SCREENING_ROLES


class ScreenReferralWork(AuditWork, HasCases, HasOutbox, HasReferrals, Protocol):
    """The unit of work :class:`ScreenReferral` uses."""


@attrs.frozen(kw_only=True)
class ScreenIn:
    title: str
    family_name: str | None = None
    assign_to: UUID | None = None
    reason: str | None = None


@attrs.frozen(kw_only=True)
class ScreenOut:
    reason: str


@attrs.frozen
class Screened:
    entry: QueueEntry
    #: The case opened by a screen-in, else None.
    case: Case | None


class ScreenReferral:
    """403 for a case worker and for a screener naming itself in ``assign_to``, 404 for an
    unknown referral, 409 when it was screened already
    (checked before ``if_match``: a stale client learns who was first), 412 for a stale
    ``if_match``, 422 for a bad title or reason.

    Recorded as ``screen`` (with the case a screen-in opens) in the same transaction; a 403 or
    404 as ``denied``."""

    def __init__(self, uow: ScreenReferralWork, clock: Clock, times: ResponseTimes) -> None:
        self.uow = uow
        self.clock = clock
        self.times = times

    async def __call__(
        self, principal: Principal, referral_id: UUID, decision: ScreenIn | ScreenOut, if_match: IfMatch
    ) -> Screened:
        async with refusals_recorded(self.uow, principal, AuditAction.SCREEN, REFERRAL, referral_id):
            return await self._screen(principal, referral_id, decision, if_match)

    async def _screen(
        self, principal: Principal, referral_id: UUID, decision: ScreenIn | ScreenOut, if_match: IfMatch
    ) -> Screened:
        principal.require(*SCREENING_ROLES)
        if isinstance(decision, ScreenIn):
            principal.require_may_assign_on_opening(decision.assign_to)
        async with self.uow:
            referral = await self.uow.referrals.get_for_update(referral_id)
            if referral is None:
                raise NotFound("referral", referral_id)
            now = self.clock.now()
            case = None
            if isinstance(decision, ScreenIn):
                case = new_case(
                    id=new_id(),
                    title=decision.title,
                    family_name=decision.family_name,
                    opened_at=now,
                    created_by=principal.sub,
                    now=now,
                    referral_id=referral.id,
                )
                screened, facts = screen_in(
                    referral, case_id=case.id, by=principal.sub, now=now, reason=decision.reason
                )
            else:
                screened, facts = screen_out(referral, reason=decision.reason, by=principal.sub, now=now)
            if_match.check("referral", referral.version)
            if case is not None:
                case = await self._open(case, principal, decision.assign_to if isinstance(decision, ScreenIn) else None)
            await self.uow.referrals.save_screening(screened)
            await stage_facts(self.uow, facts, now)
            case_id = None if case is None else case.id
            await record(self.uow, principal, AuditAction.SCREEN, REFERRAL, referral.id, case_id=case_id)
            await self.uow.commit()
        return Screened(queue_entry(screened, self.times, now), case)

    async def _open(self, case: Case, principal: Principal, assign_to: UUID | None) -> Case:
        """Insert the case (and its assignment) with its events; returns it as stored."""
        await self.uow.cases.add(case)
        facts: list[tuple[EventType, dict[str, str]]] = [
            (CASE_OPENED, {"created_by": str(principal.sub), "referral_id": str(case.referral_id)})
        ]
        if assign_to is not None and await self.uow.cases.assign(case.id, assign_to, principal.sub, case.updated_at):
            facts.append((CASE_ASSIGNED, {"worker_sub": str(assign_to), "assigned_by": str(principal.sub)}))
            case = attrs.evolve(case, assigned_workers=frozenset({assign_to}), version=case.version + 1)
        events = [
            new_event(kind, aggregate_id=case.id, payload={"case_id": str(case.id), **payload}, now=case.created_at)
            for kind, payload in facts
        ]
        await stage_events(self.uow, events)
        return case
