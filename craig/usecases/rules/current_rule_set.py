"""The latest version of a rule set, through this instance's decision cache.

Shared by every reader that evaluates rules (:class:`EvaluateRuleSet`, and intake's triage in
:class:`craig.usecases.intake.submit_referral.SubmitReferral`), so a hit never reads the
database and a miss is offered back to the cache under the cache's race rules
(:mod:`craig.usecases.rules.rule_cache`).
"""

from __future__ import annotations

from typing import Protocol

from craig.domain.rules import RuleSet
from craig.ports.rules import HasRuleSets
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.rules.rule_cache import RuleSetCache


class CurrentRuleSetWork(UnitOfWork, HasRuleSets, Protocol):
    """What :func:`current_rule_set` uses."""


async def current_rule_set(uow: CurrentRuleSetWork, cache: RuleSetCache, name: str) -> RuleSet | None:
    """The latest version of ``name`` (None: there is none): from the cache, else read (in the
    caller's block, when one is open) and offered to the cache, absence included."""
    cached = cache.lookup(name)
    if cached is not None:
        return cached.rule_set
    ticket = cache.ticket()
    async with uow:
        rule_set = await uow.rule_sets.latest(name)
        await uow.commit()
    if rule_set is None:
        cache.offer_absent(name, ticket)
    else:
        cache.offer(rule_set, ticket)
    return rule_set
