"""A case's placement history, newest first."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.cases import can_see
from craig.domain.errors import NotFound
from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.placements import Placement
from craig.ports.cases import HasCases
from craig.ports.placements import HasPlacements
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import PLACEMENT


class ListCasePlacementsWork(AuditWork, HasCases, HasPlacements, Protocol):
    """The unit of work :class:`ListCasePlacements` uses."""


class ListCasePlacements:
    """404 when the case is unknown or not visible to the principal (recorded as ``denied``).
    The list is recorded with the ids it returned."""

    def __init__(self, uow: ListCasePlacementsWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, case_id: UUID, keyset: Keyset) -> KeysetPage[Placement]:
        async with refusals_recorded(self.uow, principal, AuditAction.LIST, PLACEMENT, case_id=case_id), self.uow:
            case = await self.uow.cases.get(case_id)
            if case is None or not can_see(case, principal):
                raise NotFound("case", case_id)
            found = await self.uow.placements.list_for_case(case_id, keyset)
            ids = [placement.id for placement in found.items]
            await record(self.uow, principal, AuditAction.LIST, PLACEMENT, case_id=case_id, resource_ids=ids)
            await self.uow.commit()
        return found
