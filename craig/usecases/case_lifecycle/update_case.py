"""Change a case's title and family name, from the version the client read."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.case_lifecycle import CaseDetails, update_details
from craig.domain.cases import Case
from craig.domain.versions import IfMatch
from craig.ports.cases import HasCases
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import CASE
from craig.usecases.case_lifecycle.guards import locked_visible_case
from craig.usecases.facts import stage_facts


class UpdateCaseWork(AuditWork, HasCases, HasOutbox, Protocol):
    """The unit of work :class:`UpdateCase` uses."""


class UpdateCase:
    """The case locked, its version compared with ``if_match`` (412 ``precondition-failed``
    when stale), then changed; ``cases.case_updated`` names the changed fields. Of concurrent
    changes from one read exactly one wins: the lock makes them run one after the other, and
    each later one finds a newer version. The audit entry (``update``) names the changed fields,
    never their values, and commits with the change; a refusal is recorded as ``denied``."""

    #: The case's fields a change of details may touch (their names go into the audit entry).
    FIELDS = ("title", "family_name")

    def __init__(self, uow: UpdateCaseWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(self, principal: Principal, case_id: UUID, details: CaseDetails, if_match: IfMatch) -> Case:
        async with refusals_recorded(self.uow, principal, AuditAction.UPDATE, CASE, case_id, case_id=case_id), self.uow:
            case = await locked_visible_case(self.uow, principal, case_id)
            if_match.check("case", case.version)
            now = self.clock.now()
            updated, facts = update_details(case, details, by=principal.sub, now=now)
            if facts:
                await self.uow.cases.save(updated)
                await stage_facts(self.uow, facts, now)
            changed = [name for name in self.FIELDS if getattr(case, name) != getattr(updated, name)]
            await record(
                self.uow, principal, AuditAction.UPDATE, CASE, case_id, case_id=case_id, changed_fields=changed
            )
            await self.uow.commit()
        return updated
