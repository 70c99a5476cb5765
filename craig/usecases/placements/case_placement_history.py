"""A case's placement history, newest first, with its read recorded in the audit trail.

:class:`~craig.usecases.case_lifecycle.list_case_placements.ListCasePlacements` is the case
lifecycle's reader; this one answers the same (it may stand wherever that one is expected) and
records, in the read's transaction, one ``list`` entry of placements with the case and the ids
returned, or a ``denied`` one for a 404.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.cases import can_see
from craig.domain.errors import NotFound
from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.placements import Placement
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.case_lifecycle.list_case_placements import ListCasePlacements, ListCasePlacementsWork
from craig.usecases.placements.get_placement import PLACEMENT


class CasePlacementHistoryWork(ListCasePlacementsWork, AuditWork, Protocol):
    """The unit of work :class:`CasePlacementHistory` uses."""


class CasePlacementHistory(ListCasePlacements):
    """404 when the case is unknown or not visible to the principal (recorded as ``denied``)."""

    def __init__(self, uow: CasePlacementHistoryWork) -> None:
        super().__init__(uow)
        self.audited_uow = uow

    async def __call__(self, principal: Principal, case_id: UUID, keyset: Keyset) -> KeysetPage[Placement]:
        uow = self.audited_uow
        async with refusals_recorded(uow, principal, AuditAction.LIST, PLACEMENT, case_id=case_id), uow:
            case = await uow.cases.get(case_id)
            if case is None or not can_see(case, principal):
                raise NotFound("case", case_id)
            page = await uow.placements.list_for_case(case_id, keyset)
            ids = [placement.id for placement in page.items]
            await record(uow, principal, AuditAction.LIST, PLACEMENT, case_id=case_id, resource_ids=ids)
            await uow.commit()
        return page
