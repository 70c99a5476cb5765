"""Use case: list the rule sets, each by its latest version.

Read from the database, never from the decision cache, which holds only the rule sets this
instance has used.
"""

from __future__ import annotations

from typing import Protocol

from craig.domain.pages import Page, PageRequest
from craig.ports.rules import HasRuleSets, RuleSetSummary
from craig.ports.unit_of_work import UnitOfWork


class ListRuleSetsWork(UnitOfWork, HasRuleSets, Protocol):
    """The unit of work :class:`ListRuleSets` uses."""


class ListRuleSets:
    """One page of rule sets, each summarised by its latest version."""

    def __init__(self, uow: ListRuleSetsWork) -> None:
        self.uow = uow

    async def __call__(self, page: PageRequest) -> Page[RuleSetSummary]:
        async with self.uow:
            result = await self.uow.rule_sets.list_latest(page)
            await self.uow.commit()
        return result
