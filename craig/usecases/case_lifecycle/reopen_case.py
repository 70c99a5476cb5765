"""Reopen a closed case (supervisors and admins)."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal, Role
from craig.domain.audit import AuditAction
from craig.domain.case_lifecycle import reopen
from craig.domain.cases import Case
from craig.domain.versions import IfMatch, check_if_match
from craig.ports.cases import HasCases
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import CASE
from craig.usecases.case_lifecycle.guards import locked_visible_case
from craig.usecases.facts import stage_facts


class ReopenCaseWork(AuditWork, HasCases, HasOutbox, Protocol):
    """The unit of work :class:`ReopenCase` uses."""


class ReopenCase:
    """403 for other roles (before looking the case up), 409 ``invalid-case-transition`` for an
    open case, 412 when an ``if_match`` given is stale. Stages ``cases.case_reopened``. The audit
    entry (``reopen``) commits with the change; a refusal is recorded as ``denied``."""

    #: The fields a reopening changes (their names go into the audit entry).
    CHANGED = ("status", "closed_at", "close_reason")

    def __init__(self, uow: ReopenCaseWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(self, principal: Principal, case_id: UUID, reason: str, if_match: IfMatch | None) -> Case:
        async with refusals_recorded(self.uow, principal, AuditAction.REOPEN, CASE, case_id, case_id=case_id):
            principal.require(Role.SUPERVISOR, Role.ADMIN)
            async with self.uow:
                case = await locked_visible_case(self.uow, principal, case_id)
                check_if_match(if_match, "case", case.version)
                now = self.clock.now()
                reopened, facts = reopen(case, reason, by=principal.sub, now=now)
                await self.uow.cases.save(reopened)
                await stage_facts(self.uow, facts, now)
                await record(
                    self.uow, principal, AuditAction.REOPEN, CASE, case_id, case_id=case_id, changed_fields=self.CHANGED
                )
                await self.uow.commit()
        return reopened
