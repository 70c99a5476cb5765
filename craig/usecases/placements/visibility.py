"""A placement belongs to a case: the case decides who may see it.

A principal who cannot see the case gets 404 for the placement (or for a new placement of that
case), never 403, so its existence does not leak. The caller names the error, so an invisible
placement answers exactly like an unknown one (``UnknownPlacement``).
"""

from __future__ import annotations

from uuid import UUID

from craig.domain.access import Principal
from craig.domain.cases import can_see
from craig.domain.errors import NotFound
from craig.ports.cases import HasCases


async def require_visible_case(uow: HasCases, principal: Principal, case_id: UUID, missing: NotFound) -> None:
    """Raise ``missing`` unless the case exists and ``principal`` may see it."""
    case = await uow.cases.get(case_id)
    if case is None or not can_see(case, principal):
        raise missing
