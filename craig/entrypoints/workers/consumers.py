"""Every event consumer (subscription) this deployment runs: the one list to extend."""

from __future__ import annotations

from craig.domain.event_catalogue import RULES_CACHE_INVALIDATED
from craig.entrypoints.container import Container
from craig.ports.messaging import Subscription


def subscriptions_for(container: Container) -> list[Subscription]:
    evict_rule_cache = container.evict_rule_cache()
    return [
        # rules.cache_invalidated, broadcast to every instance; the cache is dropped whenever the
        # subscription (re)connects, as invalidations sent meanwhile are lost to this instance
        Subscription(
            consumer="rules-cache",
            event_types=(RULES_CACHE_INVALIDATED.name,),
            handler=evict_rule_cache,
            broadcast=True,
            on_connected=evict_rule_cache.subscribed,
        ),
    ]
