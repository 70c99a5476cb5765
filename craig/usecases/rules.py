"""Triage rule sets: create a version, read, list, evaluate; and keep every instance's cache true.

Creating a version follows the seed: commit the set and stage ``rules.cache_invalidated
{instance_id}`` in the same transaction, then insert the set into this instance's own cache.
Every other instance evicts the name when the event reaches it (:class:`EvictOnInvalidation`);
an instance ignores its own event, its cache being current already.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from craig.domain.access import Principal, Role
from craig.domain.errors import NotFound
from craig.domain.events import EventEnvelope
from craig.domain.pages import Page, PageRequest
from craig.domain.rule_documents import parse_rules, validate_name
from craig.domain.rules import Evaluation, RuleSet
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.ports.rules import HasRuleSets, RuleSetSummary
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.events import new_event, stage_event
from craig.usecases.rule_cache import RuleSetCache

SOURCE = "craig-rules"
CACHE_INVALIDATED = "rules.cache_invalidated"


class CreateRuleSetWork(UnitOfWork, HasOutbox, HasRuleSets, Protocol):
    """The unit of work :class:`CreateRuleSet` uses."""


class GetRuleSetWork(UnitOfWork, HasRuleSets, Protocol):
    """The unit of work :class:`GetRuleSet` uses."""


class ListRuleSetsWork(UnitOfWork, HasRuleSets, Protocol):
    """The unit of work :class:`ListRuleSets` uses."""


class EvaluateRuleSetWork(UnitOfWork, HasRuleSets, Protocol):
    """The unit of work :class:`EvaluateRuleSet` uses."""


async def current_rule_set(uow: GetRuleSetWork, cache: RuleSetCache, name: str) -> RuleSet | None:
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


class CreateRuleSet:
    """Store a new version of a rule set (supervisors and admins) and tell the other instances."""

    def __init__(self, uow: CreateRuleSetWork, cache: RuleSetCache, instance_id: str, clock: Clock) -> None:
        self.uow = uow
        self.cache = cache
        self.instance_id = instance_id
        self.clock = clock

    async def __call__(self, principal: Principal, name: Any, document: Any) -> RuleSet:
        principal.require(Role.SUPERVISOR, Role.ADMIN)
        checked_name = validate_name(name)
        rules = parse_rules(document)
        now = self.clock.now()
        async with self.uow:
            version = await self.uow.rule_sets.add_version(checked_name, document, principal.sub, now)
            await stage_event(
                self.uow,
                new_event(
                    source=SOURCE,
                    type=CACHE_INVALIDATED,
                    aggregate_type="rule_set",
                    aggregate_id=checked_name,
                    payload={"instance_id": self.instance_id, "name": checked_name, "version": version},
                    now=now,
                ),
            )
            rule_set = RuleSet(
                name=checked_name,
                version=version,
                rules=rules,
                document=tuple(document),
                created_by=principal.sub,
                created_at=now,
            )
            # Only a committed version may enter the cache: with the idempotency layer holding
            # the commit, a failed finalize rolls the version back after this method returned.
            self.uow.after_commit(lambda: self.cache.insert(rule_set))
            await self.uow.commit()
        return rule_set


class GetRuleSet:
    """One version of a rule set (the latest when ``version`` is None), from the database."""

    def __init__(self, uow: GetRuleSetWork) -> None:
        self.uow = uow

    async def __call__(self, name: str, version: int | None = None) -> RuleSet:
        async with self.uow:
            if version is None:
                rule_set = await self.uow.rule_sets.latest(name)
            else:
                rule_set = await self.uow.rule_sets.get(name, version)
            await self.uow.commit()
        if rule_set is None:
            raise NotFound("rule set", name if version is None else f"{name} version {version}")
        return rule_set


class ListRuleSets:
    def __init__(self, uow: ListRuleSetsWork) -> None:
        self.uow = uow

    async def __call__(self, page: PageRequest) -> Page[RuleSetSummary]:
        async with self.uow:
            result = await self.uow.rule_sets.list_latest(page)
            await self.uow.commit()
        return result


class EvaluateRuleSet:
    """Evaluate the latest version of a rule set against ``facts`` (first matching rule wins)."""

    def __init__(self, uow: EvaluateRuleSetWork, cache: RuleSetCache) -> None:
        self.uow = uow
        self.cache = cache

    async def __call__(self, name: str, facts: Mapping[str, Any]) -> tuple[RuleSet, Evaluation]:
        rule_set = await current_rule_set(self.uow, self.cache, name)
        if rule_set is None:
            raise NotFound("rule set", name)
        return rule_set, rule_set.evaluate(facts)


class EvictOnInvalidation:
    """The broadcast consumer of ``rules.cache_invalidated``: evict unless the event is ours.

    Safe to repeat (evicting twice costs one extra read). An event without a usable name evicts
    everything rather than risk keeping a stale version.
    """

    event_types: Sequence[str] = (CACHE_INVALIDATED,)

    def __init__(self, cache: RuleSetCache, instance_id: str) -> None:
        self.cache = cache
        self.instance_id = instance_id

    def subscribed(self) -> None:
        """The subscription (re)connected: invalidations sent while it was away are lost to this
        instance, so nothing cached before can be trusted."""
        self.cache.evict(None)

    async def __call__(self, envelope: EventEnvelope, uow: UnitOfWork) -> None:
        payload = envelope.payload
        if payload.get("instance_id") == self.instance_id:
            return
        name = payload.get("name")
        self.cache.evict(name if isinstance(name, str) and name else None)
