"""Use case: read one foster home.

Homes are not tied to a case, so every authenticated principal may read them; an unknown home
answers 404 ``UnknownFosterHome``.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.placements import FosterHome, UnknownFosterHome
from craig.ports.placements import HasFosterHomes
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import FOSTER_HOME


class GetFosterHomeWork(AuditWork, HasFosterHomes, Protocol):
    """The unit of work :class:`GetFosterHome` uses."""


class GetFosterHome:
    """One home, or :class:`NotFound` (404). Every authenticated principal may read homes. The
    read is recorded (``read``) in its transaction; a 404 as ``denied``."""

    def __init__(self, uow: GetFosterHomeWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, home_id: UUID) -> FosterHome:
        async with refusals_recorded(self.uow, principal, AuditAction.READ, FOSTER_HOME, home_id), self.uow:
            home = await self.uow.foster_homes.get(home_id)
            if home is None:
                raise UnknownFosterHome(home_id)
            await record(self.uow, principal, AuditAction.READ, FOSTER_HOME, home.id)
            await self.uow.commit()
        return home
