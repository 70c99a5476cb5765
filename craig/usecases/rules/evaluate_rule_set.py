"""Use case: evaluate a rule set against facts.

The latest version comes from this instance's decision cache when it is there and fresh
(:func:`craig.usecases.rules.current_rule_set.current_rule_set`), so an evaluation on a hit
reads no database.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from craig.domain.errors import NotFound
from craig.domain.rule_documents import is_rule_set_name
from craig.domain.rules import Evaluation, RuleSet
from craig.ports.rules import HasRuleSets
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.rules.current_rule_set import current_rule_set
from craig.usecases.rules.rule_cache import RuleSetCache


class EvaluateRuleSetWork(UnitOfWork, HasRuleSets, Protocol):
    """The unit of work :class:`EvaluateRuleSet` uses."""


class EvaluateRuleSet:
    """Evaluate the latest version of a rule set against ``facts`` (first matching rule wins)."""

    def __init__(self, uow: EvaluateRuleSetWork, cache: RuleSetCache) -> None:
        self.uow = uow
        self.cache = cache

    async def __call__(self, name: str, facts: Mapping[str, Any]) -> tuple[RuleSet, Evaluation]:
        if not is_rule_set_name(name):
            raise NotFound("rule set", repr(name))  # no set can have it: the database is not asked
        rule_set = await current_rule_set(self.uow, self.cache, name)
        if rule_set is None:
            raise NotFound("rule set", name)
        return rule_set, rule_set.evaluate(facts)
