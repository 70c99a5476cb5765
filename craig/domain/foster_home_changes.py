"""A foster home's details, capacity and status change, as a pure decision.

A home's capacity never drops below its occupancy (its active placements), and a home closes
only when it has none; a closed home takes no new placement (:func:`require_open_home`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final
from uuid import UUID

import attrs

from craig.domain import event_catalogue as catalogue
from craig.domain.errors import Conflict, InvalidInput
from craig.domain.facts import Fact
from craig.domain.placements import FosterHome, FosterHomeStatus, home_capacity, home_name

FOSTER_HOME_UPDATED: Final = catalogue.FOSTER_HOME_UPDATED.name


class CapacityBelowOccupancy(Conflict):
    code = "capacity-below-occupancy"

    def __init__(self, home: FosterHome, capacity: int) -> None:
        super().__init__(
            f"foster home {home.id} has {home.occupancy} active placements; capacity {capacity} is too low"
        )
        self.problem_extra: dict[str, Any] = {"occupancy": home.occupancy, "capacity": capacity}


class FosterHomeHasActivePlacements(Conflict):
    code = "foster-home-has-active-placements"

    def __init__(self, home: FosterHome) -> None:
        super().__init__(f"foster home {home.id} has {home.occupancy} active placements; end or move them first")
        self.problem_extra: dict[str, Any] = {"occupancy": home.occupancy}


@attrs.frozen(kw_only=True)
class FosterHomeChange:
    """What a PATCH asks; a field left None is left as it is."""

    name: str | None = None
    capacity: int | None = None
    status: FosterHomeStatus | None = None

    @classmethod
    def parse(cls, *, name: str | None, capacity: int | None, status: str | None) -> FosterHomeChange:
        """Validate the shape; :class:`InvalidInput` (422)."""
        if name is not None:
            name = home_name(name)
        if capacity is not None:
            capacity = home_capacity(capacity)
        parsed = None
        if status is not None:
            try:
                parsed = FosterHomeStatus(status)
            except ValueError:
                raise InvalidInput(f"status must be open or closed; got {status!r}") from None
        return cls(name=name, capacity=capacity, status=parsed)


def change_foster_home(
    home: FosterHome, change: FosterHomeChange, *, by: UUID, now: datetime
) -> tuple[FosterHome, tuple[Fact, ...]]:
    """Apply ``change`` to the locked ``home``. 409 when the capacity would fall below the
    occupancy or a home with active placements would close; nothing changes then."""
    changes: dict[str, Any] = {}
    if change.name is not None and change.name != home.name:
        changes["name"] = change.name
    if change.capacity is not None and change.capacity != home.capacity:
        if change.capacity < home.occupancy:
            raise CapacityBelowOccupancy(home, change.capacity)
        changes["capacity"] = change.capacity
    if change.status is not None and change.status is not home.status:
        if change.status is FosterHomeStatus.CLOSED and home.occupancy > 0:
            raise FosterHomeHasActivePlacements(home)
        changes["status"] = change.status
    if not changes:
        return home, ()
    updated = attrs.evolve(home, **changes, version=home.version + 1)
    payload = {
        "foster_home_id": str(home.id),
        "fields": sorted(changes),
        "capacity": updated.capacity,
        "status": updated.status.value,
        "updated_by": str(by),
    }
    return updated, (
        Fact(type=FOSTER_HOME_UPDATED, aggregate_type="foster_home", aggregate_id=home.id, payload=payload),
    )
