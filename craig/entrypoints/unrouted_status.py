"""Operator views of the events no subscription took (``craig.unrouted``): the metrics
refresher and the ``craig status`` section."""

from __future__ import annotations

from typing import Any

from craig.entrypoints import metrics
from craig.entrypoints.container import Container


def unrouted_backlog(container: Container) -> metrics.Refresher:
    """Refresh ``craig_unrouted_events`` (the unrouted queue's depth) on each scrape."""

    async def refresh() -> None:
        metrics.unrouted_events.set(await container.unrouted_events().count())

    return refresh


async def unrouted_section(container: Container) -> dict[str, Any]:
    """``craig status``: how many events wait in the unrouted queue, and where."""
    unrouted = container.unrouted_events()
    return {"events no subscription took": await unrouted.count(), "kept in": unrouted.location}
