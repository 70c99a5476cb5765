"""The latest version of every rule set by name, one keyset page at a time."""

from __future__ import annotations

from typing import Protocol

from craig.domain.keyset import Keyset, KeysetPage
from craig.ports.rules import HasRuleSets, RuleSetSummary
from craig.ports.unit_of_work import UnitOfWork


class ListRuleSetPageWork(UnitOfWork, HasRuleSets, Protocol):
    """The unit of work :class:`ListRuleSetPage` uses."""


class ListRuleSetPage:
    """Every authenticated principal may list rule sets."""

    def __init__(self, uow: ListRuleSetPageWork) -> None:
        self.uow = uow

    async def __call__(self, keyset: Keyset) -> KeysetPage[RuleSetSummary]:
        async with self.uow:
            return await self.uow.rule_sets.latest_page(keyset)
