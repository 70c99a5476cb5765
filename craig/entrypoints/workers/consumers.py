"""Every event consumer (subscription) this deployment runs: the list itself is the container's
``subscriptions`` provider (craig/entrypoints/container.py), the one list to extend."""

from __future__ import annotations

from craig.entrypoints.container import Container
from craig.ports.messaging import Subscription


def subscriptions_for(container: Container) -> list[Subscription]:
    subscriptions: list[Subscription] = container.subscriptions()
    return subscriptions
