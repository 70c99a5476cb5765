"""Close an open case that has no active placement."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.case_lifecycle import close
from craig.domain.cases import Case
from craig.domain.versions import IfMatch
from craig.ports.cases import HasCases
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.ports.placements import HasPlacements
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import CASE
from craig.usecases.case_lifecycle.guards import locked_visible_case
from craig.usecases.facts import stage_facts


class CloseCaseWork(AuditWork, HasCases, HasOutbox, HasPlacements, Protocol):
    """The unit of work :class:`CloseCase` uses."""


class CloseCase:
    """409 ``case-has-active-placement`` while the case has one, 409 ``invalid-case-transition``
    when it is closed already, 412 when ``if_match`` is stale. Stages ``cases.case_closed``.

    The case is locked first (``FOR NO KEY UPDATE``); whoever adds a placement holds the case
    ``FOR SHARE`` until it commits, so the count of active placements read here cannot change
    before this closure commits, and a placement started after it finds the case closed.

    The audit entry (``close``) commits with the closure; a refusal is recorded as ``denied``."""

    #: The fields a closure changes (their names go into the audit entry).
    CHANGED = ("status", "closed_at", "close_reason")

    def __init__(self, uow: CloseCaseWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(self, principal: Principal, case_id: UUID, reason: str, if_match: IfMatch) -> Case:
        async with refusals_recorded(self.uow, principal, AuditAction.CLOSE, CASE, case_id, case_id=case_id), self.uow:
            case = await locked_visible_case(self.uow, principal, case_id)
            if_match.check("case", case.version)
            active = await self.uow.placements.count_active_for_case(case_id)
            now = self.clock.now()
            closed, facts = close(case, reason, active_placements=active, by=principal.sub, now=now)
            await self.uow.cases.save(closed)
            await stage_facts(self.uow, facts, now)
            await record(
                self.uow, principal, AuditAction.CLOSE, CASE, case_id, case_id=case_id, changed_fields=self.CHANGED
            )
            await self.uow.commit()
        return closed
