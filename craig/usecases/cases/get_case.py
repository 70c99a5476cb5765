"""Use case: read one case.

A case the principal may not see answers 404, as if it did not exist
(:func:`craig.usecases.cases.visibility.visible_case`). The read is recorded in the audit trail
in its own transaction (a refused one as ``denied``); a read whose entry cannot be written is
not served.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.cases import Case
from craig.ports.cases import HasCases
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import CASE
from craig.usecases.cases.visibility import visible_case


class GetCaseWork(AuditWork, HasCases, Protocol):
    """The unit of work :class:`GetCase` uses."""


class GetCase:
    """One case the principal may see."""

    def __init__(self, uow: GetCaseWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, case_id: UUID) -> Case:
        async with refusals_recorded(self.uow, principal, AuditAction.READ, CASE, case_id, case_id=case_id), self.uow:
            case = await visible_case(self.uow, principal, case_id)
            await record(self.uow, principal, AuditAction.READ, CASE, case_id, case_id=case_id)
            await self.uow.commit()
        return case
