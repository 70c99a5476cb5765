"""Use case: the broadcast consumer that keeps this instance's decision cache true.

Each instance has a queue of its own on the ``rules-cache`` subscription, so every instance
receives every ``rules.cache_invalidated`` (:class:`CreateRuleSet` stages it). Invalidations
published while the subscription was away are lost to the instance, so a reconnect drops the
whole cache (:meth:`EvictOnInvalidation.subscribed`).
"""

from __future__ import annotations

from collections.abc import Sequence

from craig.domain.event_catalogue import RULES_CACHE_INVALIDATED
from craig.domain.events import EventEnvelope
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.rules.rule_cache import RuleSetCache


class EvictOnInvalidation:
    """The broadcast consumer of ``rules.cache_invalidated``: evict unless the event is ours.

    Safe to repeat (evicting twice costs one extra read). An event without a usable name evicts
    everything rather than risk keeping a stale version.
    """

    event_types: Sequence[str] = (RULES_CACHE_INVALIDATED.name,)

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
