"""List audit entries, newest first, for supervisors and admins."""

from __future__ import annotations

from typing import Protocol

from craig.domain.access import Principal, Role
from craig.domain.audit import AuditAction
from craig.domain.audit_query import AuditCursor, AuditFilter, AuditPage, page_size
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import AUDIT_ENTRY


class ListAuditEntriesWork(AuditWork, Protocol):
    """The unit of work :class:`ListAuditEntries` uses."""


class ListAuditEntries:
    def __init__(self, uow: ListAuditEntriesWork) -> None:
        self.uow = uow

    async def __call__(
        self, principal: Principal, where: AuditFilter, *, limit: int | None = None, cursor: str | None = None
    ) -> AuditPage:
        """Raise :class:`craig.domain.errors.Forbidden` for a case worker, and
        :class:`craig.domain.errors.InvalidInput` for a limit out of range or a cursor this API
        did not hand out."""
        async with refusals_recorded(self.uow, principal, AuditAction.LIST, AUDIT_ENTRY):
            principal.require(Role.SUPERVISOR, Role.ADMIN)
            size = page_size(limit)
            after = AuditCursor.decode(cursor) if cursor else None
            async with self.uow:
                page = await self.uow.audit.list(where, size, after)
                # Reading the audit log is itself audited.
                ids = [entry.id for entry in page.items]
                await record(
                    self.uow, principal, AuditAction.LIST, AUDIT_ENTRY, resource_ids=ids, case_id=where.case_id
                )
                await self.uow.commit()
        return page
