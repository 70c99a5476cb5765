"""The ``placements`` section of ``craig status``: homes at capacity, and occupancy drift."""

from __future__ import annotations

from typing import Any

from craig.domain.constants import STATUS_FULL_HOMES_SHOWN
from craig.entrypoints.container import Container


async def placements_section(container: Container) -> dict[str, Any]:
    uow = container.uow()
    async with uow:
        stats = await uow.foster_homes.stats(STATUS_FULL_HOMES_SHOWN)
    shown = ", ".join(f"{home.name} ({home.occupancy}/{home.capacity})" for home in stats.full_homes)
    if stats.at_capacity > len(stats.full_homes):
        shown += f", … {stats.at_capacity - len(stats.full_homes)} more"
    return {
        "foster homes": stats.homes,
        "homes at capacity": stats.at_capacity,
        "full homes": shown or "-",
        # Occupancy must equal the active placements; anything listed here needs investigating.
        "homes with occupancy drift": ", ".join(str(home_id) for home_id in stats.drifted) or "none",
    }
