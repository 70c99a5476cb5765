"""Use case: read one case.

A case the principal may not see answers 404, as if it did not exist
(:func:`craig.usecases.cases.visibility.visible_case`).
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.cases import Case
from craig.ports.cases import HasCases
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.cases.visibility import visible_case


class GetCaseWork(UnitOfWork, HasCases, Protocol):
    """The unit of work :class:`GetCase` uses."""


class GetCase:
    """One case the principal may see."""

    def __init__(self, uow: GetCaseWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, case_id: UUID) -> Case:
        async with self.uow:
            return await visible_case(self.uow, principal, case_id)
