"""Every event consumer (subscription) this deployment runs: the one list to extend."""

from __future__ import annotations

from craig.entrypoints.container import Container
from craig.ports.messaging import Subscription


def subscriptions_for(container: Container) -> list[Subscription]:
    return [
        # rules.cache_invalidated, broadcast to every instance (issue 8)
        Subscription(
            consumer="rules-cache",
            event_types=("rules.cache_invalidated",),
            handler=container.evict_rule_cache(),
            broadcast=True,
        ),
    ]
