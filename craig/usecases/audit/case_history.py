"""A case's history: what changed in the case and in its contacts, attachments and placements."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.audit_query import AuditCursor, AuditPage, page_size
from craig.ports.cases import HasCases
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import CASE_HISTORY
from craig.usecases.cases import visible_case


class ShowCaseHistoryWork(AuditWork, HasCases, Protocol):
    """The unit of work :class:`ShowCaseHistory` uses."""


class ShowCaseHistory:
    def __init__(self, uow: ShowCaseHistoryWork) -> None:
        self.uow = uow

    async def __call__(
        self, principal: Principal, case_id: UUID, *, limit: int | None = None, cursor: str | None = None
    ) -> AuditPage:
        """Every allowed change of the case (no read, list, search, download or replay, and no
        refused attempt), newest first. Whoever may see
        the case may see its history; for anyone else the case does not exist (:class:`NotFound`)."""
        size = page_size(limit)
        after = AuditCursor.decode(cursor) if cursor else None
        async with refusals_recorded(self.uow, principal, AuditAction.READ, CASE_HISTORY, case_id, case_id=case_id):
            async with self.uow:
                await visible_case(self.uow, principal, case_id)
                page = await self.uow.audit.case_history(case_id, size, after)
                # Reading the audit log is itself audited.
                await record(self.uow, principal, AuditAction.READ, CASE_HISTORY, case_id, case_id=case_id)
                await self.uow.commit()
        return page
