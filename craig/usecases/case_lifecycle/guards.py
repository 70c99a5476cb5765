"""Reading a case to change it or add to it: visible to the principal, and (to add) open."""

from __future__ import annotations

from uuid import UUID

from craig.domain.access import Principal
from craig.domain.case_lifecycle import require_open
from craig.domain.cases import Case, can_see
from craig.domain.errors import NotFound
from craig.ports.cases import HasCases


async def locked_visible_case(uow: HasCases, principal: Principal, case_id: UUID) -> Case:
    """The case locked for a change of its own (``get_for_update``); :class:`NotFound` when it
    does not exist or the principal may not see it (404, never 403)."""
    case = await uow.cases.get_for_update(case_id)
    if case is None or not can_see(case, principal):
        raise NotFound("case", case_id)
    return case


async def visible_open_case(uow: HasCases, principal: Principal, case_id: UUID, *, for_update: bool = False) -> Case:
    """The case, kept from closing until the caller's transaction ends (``get_for_share``, or
    ``get_for_update`` when the caller changes the case row itself); :class:`NotFound` as
    :func:`locked_visible_case`, ``CaseClosed`` (409) when it is closed."""
    case = await (uow.cases.get_for_update if for_update else uow.cases.get_for_share)(case_id)
    if case is None or not can_see(case, principal):
        raise NotFound("case", case_id)
    require_open(case)
    return case
