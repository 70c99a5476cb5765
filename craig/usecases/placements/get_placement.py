"""Use case: read one placement.

A placement of a case the principal may not see answers 404 ``UnknownPlacement``, exactly like
an unknown one (:mod:`craig.usecases.placements.visibility`).
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.placements import Placement, UnknownPlacement
from craig.ports.cases import HasCases
from craig.ports.placements import HasPlacements
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import PLACEMENT
from craig.usecases.placements.visibility import require_visible_case


class GetPlacementWork(AuditWork, HasCases, HasPlacements, Protocol):
    """The unit of work :class:`GetPlacement` uses."""


class GetPlacement:
    """One placement of a case the principal can see, else :class:`NotFound` (404). The read is
    recorded (``read``, with the case) in its transaction; a 404 as ``denied``."""

    def __init__(self, uow: GetPlacementWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, placement_id: UUID) -> Placement:
        missing = UnknownPlacement(placement_id)
        async with refusals_recorded(self.uow, principal, AuditAction.READ, PLACEMENT, placement_id), self.uow:
            placement = await self.uow.placements.get(placement_id)
            if placement is None:
                raise missing
            await require_visible_case(self.uow, principal, placement.case_id, missing)
            await record(self.uow, principal, AuditAction.READ, PLACEMENT, placement.id, case_id=placement.case_id)
            await self.uow.commit()
        return placement
