"""Use case: store a new version of a triage rule set.

Creating a version commits the set and stages ``rules.cache_invalidated {instance_id}`` in
the same transaction, then inserts the set into this instance's own cache.
Every other instance evicts the name when the event reaches it (:class:`EvictOnInvalidation`);
an instance ignores its own event, its cache being current already.
"""

from __future__ import annotations

from typing import Any, Protocol

from craig.domain.access import Principal, Role
from craig.domain.audit import AuditAction
from craig.domain.event_catalogue import RULES_CACHE_INVALIDATED
from craig.domain.rule_documents import parse_rules, validate_name
from craig.domain.rules import RuleSet
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.ports.rules import HasRuleSets
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import RULE_SET
from craig.usecases.events.staging import new_event, stage_event
from craig.usecases.rules.rule_cache import RuleSetCache


def rule_set_version_id(name: str, version: int) -> str:
    """How an audit entry names one version of a rule set: ``name:version``."""
    return f"{name}:{version}"


class CreateRuleSetWork(AuditWork, HasOutbox, HasRuleSets, Protocol):
    """The unit of work :class:`CreateRuleSet` uses."""


class CreateRuleSet:
    """Store a new version of a rule set (supervisors and admins) and tell the other instances.

    An operator's action: recorded as ``rule_set_version`` (``name:version``) by the principal,
    in the same transaction as the version; a 403 as ``denied`` (naming the set asked for)."""

    def __init__(self, uow: CreateRuleSetWork, cache: RuleSetCache, instance_id: str, clock: Clock) -> None:
        self.uow = uow
        self.cache = cache
        self.instance_id = instance_id
        self.clock = clock

    async def __call__(self, principal: Principal, name: Any, document: Any) -> RuleSet:
        async with refusals_recorded(self.uow, principal, AuditAction.RULE_SET_VERSION, RULE_SET, name):
            principal.require(Role.SUPERVISOR, Role.ADMIN)
        checked_name = validate_name(name)
        parse_rules(document)  # refused before anything is written
        now = self.clock.now()
        async with self.uow:
            version = await self.uow.rule_sets.add_version(checked_name, document, principal.sub, now)
            await stage_event(
                self.uow,
                new_event(
                    RULES_CACHE_INVALIDATED,
                    aggregate_id=checked_name,
                    payload={"instance_id": self.instance_id, "name": checked_name, "version": version},
                    now=now,
                ),
            )
            # The version as it was stored, not as it was sent: the store may write a value in
            # another form (JSONB keeps 1e23 as the integer 100000000000000000000000), and every
            # instance that reads the version later compiles the stored form. Caching the one
            # sent made this instance decide otherwise than the rest until its entry aged out.
            rule_set = await self.uow.rule_sets.get(checked_name, version)
            if rule_set is None:
                raise RuntimeError(f"rule set {checked_name!r} version {version} was not found after it was added")
            # Only a committed version may enter the cache: with the idempotency layer holding
            # the commit, a failed finalize rolls the version back after this method returned.
            self.uow.after_commit(lambda: self.cache.insert(rule_set))
            version_id = rule_set_version_id(checked_name, version)
            await record(self.uow, principal, AuditAction.RULE_SET_VERSION, RULE_SET, version_id)
            await self.uow.commit()
        return rule_set
