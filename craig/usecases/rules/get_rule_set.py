"""Use case: read one version of a rule set.

Always from the database, never from the decision cache: an operator who reads a rule set sees
exactly what is stored, including an older version asked for by number.
"""

from __future__ import annotations

from typing import Protocol

from craig.domain.constants import MAX_STORED_INTEGER
from craig.domain.errors import NotFound
from craig.domain.rule_documents import is_rule_set_name
from craig.domain.rules import RuleSet
from craig.ports.rules import HasRuleSets
from craig.ports.unit_of_work import UnitOfWork


class GetRuleSetWork(UnitOfWork, HasRuleSets, Protocol):
    """The unit of work :class:`GetRuleSet` uses."""


class GetRuleSet:
    """One version of a rule set (the latest when ``version`` is None), from the database."""

    def __init__(self, uow: GetRuleSetWork) -> None:
        self.uow = uow

    async def __call__(self, name: str, version: int | None = None) -> RuleSet:
        if not is_rule_set_name(name):
            raise NotFound("rule set", repr(name))  # no set can have it: the database is not asked
        if version is not None and not 1 <= version <= MAX_STORED_INTEGER:
            raise NotFound("rule set", f"{name} version {version}")  # no such version can exist
        async with self.uow:
            if version is None:
                rule_set = await self.uow.rule_sets.latest(name)
            else:
                rule_set = await self.uow.rule_sets.get(name, version)
            await self.uow.commit()
        if rule_set is None:
            raise NotFound("rule set", name if version is None else f"{name} version {version}")
        return rule_set
