"""Foster homes and placements: the transition table, end reasons and occupancy, as pure code.

A placement's life::

    planned --> active --> ended        (ended needs an end reason)
       \\--> cancelled

``ended`` and ``cancelled`` are terminal. A home's ``occupancy`` counts its *active*
placements and always lies in ``0..capacity``. Every decision here is a function of its
arguments and returns the new state with the events it causes (:mod:`placement_changes`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import date, datetime
from types import MappingProxyType
from typing import Any, Final
from uuid import UUID

import attrs

from craig.domain.constants import FOSTER_HOME_MAX_CAPACITY, FOSTER_HOME_NAME_MAX_LENGTH
from craig.domain.errors import Conflict, InvalidInput, NotFound


class PlacementStatus(enum.StrEnum):
    PLANNED = "planned"
    ACTIVE = "active"
    ENDED = "ended"
    CANCELLED = "cancelled"


class FosterHomeStatus(enum.StrEnum):
    OPEN = "open"
    CLOSED = "closed"


class EndReason(enum.StrEnum):
    REUNIFIED = "reunified"
    ADOPTED = "adopted"
    MOVED = "moved"
    DISRUPTED = "disrupted"
    AGED_OUT = "aged_out"
    OTHER = "other"


#: The one transition table. Anything not listed is refused.
TRANSITIONS: Final[Mapping[PlacementStatus, frozenset[PlacementStatus]]] = MappingProxyType(
    {
        PlacementStatus.PLANNED: frozenset({PlacementStatus.ACTIVE, PlacementStatus.CANCELLED}),
        PlacementStatus.ACTIVE: frozenset({PlacementStatus.ENDED}),
        PlacementStatus.ENDED: frozenset(),
        PlacementStatus.CANCELLED: frozenset(),
    }
)
#: Statuses a placement may be created in.
INITIAL_STATUSES: Final = frozenset({PlacementStatus.PLANNED, PlacementStatus.ACTIVE})
TERMINAL_STATUSES: Final = frozenset(s for s, targets in TRANSITIONS.items() if not targets)


class UnknownFosterHome(NotFound, LookupError):
    """No foster home has this id (404). A ``LookupError`` too: what the repositories raise."""

    def __init__(self, home_id: UUID) -> None:
        super().__init__("foster home", home_id)
        self.problem_extra: dict[str, Any] = {"foster_home_id": str(home_id)}


class UnknownPlacement(NotFound, LookupError):
    """No placement has this id (404). A ``LookupError`` too: what the repositories raise."""

    def __init__(self, placement_id: UUID) -> None:
        super().__init__("placement", placement_id)
        self.problem_extra: dict[str, Any] = {"placement_id": str(placement_id)}


class InvalidPlacementTransition(Conflict):
    code = "invalid-placement-transition"

    def __init__(self, current: PlacementStatus, new: PlacementStatus) -> None:
        super().__init__(f"a placement cannot go from {current} to {new}")
        self.problem_extra: dict[str, Any] = {"from": current.value, "to": new.value}


class FosterHomeAtCapacity(Conflict):
    code = "foster-home-at-capacity"

    def __init__(self, home: FosterHome) -> None:
        super().__init__(f"foster home {home.id} is at capacity ({home.occupancy} of {home.capacity})")
        self.problem_extra: dict[str, Any] = {
            "foster_home_id": str(home.id),
            "capacity": home.capacity,
            "occupancy": home.occupancy,
        }


class FosterHomeClosed(Conflict):
    code = "foster-home-closed"

    def __init__(self, home: FosterHome) -> None:
        super().__init__(f"foster home {home.id} is closed; it takes no new placement")
        self.problem_extra: dict[str, Any] = {"foster_home_id": str(home.id)}


class OccupancyUnderflow(Conflict):
    """Vacating an empty home: the stored occupancy disagrees with the placements."""

    code = "occupancy-underflow"

    def __init__(self, home: FosterHome) -> None:
        super().__init__(f"foster home {home.id} has no occupied place to free")


def validate_placement_transition(current: PlacementStatus, new: PlacementStatus) -> None:
    """Raise :class:`InvalidPlacementTransition` (409, naming ``from`` and ``to``) unless the
    table allows ``current -> new``."""
    if new not in TRANSITIONS[current]:
        raise InvalidPlacementTransition(current, new)


def _choice(kind: type[enum.StrEnum], field: str, value: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(member.value for member in kind)
        raise InvalidInput(f"{field} must be one of {allowed}; got {value!r}", field=field) from None


def parse_status(value: str) -> PlacementStatus:
    """The status named by ``value``, or :class:`InvalidInput` (422)."""
    status: PlacementStatus = _choice(PlacementStatus, "status", value)
    return status


def parse_end_reason(value: str) -> EndReason:
    """The end reason named by ``value``, or :class:`InvalidInput` (422)."""
    reason: EndReason = _choice(EndReason, "end_reason", value)
    return reason


def _occupancy_within_capacity(home: FosterHome, attribute: Any, occupancy: int) -> None:
    if not 0 <= occupancy <= home.capacity:
        raise ValueError(f"occupancy {occupancy} outside 0..{home.capacity}")


@attrs.frozen(kw_only=True)
class FosterHome:
    id: UUID
    name: str
    capacity: int = attrs.field(validator=attrs.validators.ge(1))
    occupancy: int = attrs.field(validator=_occupancy_within_capacity)
    created_by: UUID
    created_at: datetime
    status: FosterHomeStatus = FosterHomeStatus.OPEN
    #: Grows by one with every change of the home, its occupancy included (its ETag).
    version: int = 1

    @property
    def is_full(self) -> bool:
        return self.occupancy >= self.capacity

    @property
    def is_open(self) -> bool:
        return self.status is FosterHomeStatus.OPEN


def require_open_home(home: FosterHome) -> None:
    """:class:`FosterHomeClosed` (409) unless the home takes placements."""
    if not home.is_open:
        raise FosterHomeClosed(home)


def new_foster_home(*, id: UUID, name: str, capacity: int, created_by: UUID, now: datetime) -> FosterHome:
    """A validated, empty home; :class:`InvalidInput` (422) on a bad name or capacity."""
    name, capacity = home_name(name), home_capacity(capacity)
    return FosterHome(id=id, name=name, capacity=capacity, occupancy=0, created_by=created_by, created_at=now)


def home_name(name: str) -> str:
    """A home's name, trimmed; :class:`InvalidInput` (422) when empty or too long."""
    name = name.strip()
    if not name:
        raise InvalidInput("name must not be empty", field="name")
    if len(name) > FOSTER_HOME_NAME_MAX_LENGTH:
        raise InvalidInput(f"name must be at most {FOSTER_HOME_NAME_MAX_LENGTH} characters", field="name")
    return name


def home_capacity(capacity: int) -> int:
    """A home's capacity; :class:`InvalidInput` (422) outside ``1..FOSTER_HOME_MAX_CAPACITY``."""
    if isinstance(capacity, bool) or not 1 <= capacity <= FOSTER_HOME_MAX_CAPACITY:
        raise InvalidInput(f"capacity must be an integer from 1 to {FOSTER_HOME_MAX_CAPACITY}", field="capacity")
    return capacity


def occupy(home: FosterHome) -> FosterHome:
    """One more active placement; :class:`FosterHomeClosed` (409) when the home is closed,
    :class:`FosterHomeAtCapacity` (409) when it is full."""
    require_open_home(home)
    if home.is_full:
        raise FosterHomeAtCapacity(home)
    return attrs.evolve(home, occupancy=home.occupancy + 1)


def vacate(home: FosterHome) -> FosterHome:
    """One active placement fewer; never below zero."""
    if home.occupancy <= 0:
        raise OccupancyUnderflow(home)
    return attrs.evolve(home, occupancy=home.occupancy - 1)


@attrs.frozen(kw_only=True)
class Placement:
    id: UUID
    case_id: UUID
    foster_home_id: UUID | None
    status: PlacementStatus
    start_date: date
    end_reason: EndReason | None = None
    ended_at: datetime | None = None
    created_by: UUID
    created_at: datetime
    updated_at: datetime
    #: Grows by one with every change (its ETag).
    version: int = 1

    @property
    def occupies_home(self) -> bool:
        """True when this placement counts towards its home's occupancy."""
        return self.status is PlacementStatus.ACTIVE


def history_key(placement: Placement) -> tuple[datetime, UUID]:
    """Placement histories' order (newest first when descending): creation, then id."""
    return (placement.created_at, placement.id)


def home_key(home: FosterHome) -> tuple[str, UUID]:
    """Foster homes' order: name, then id."""
    return (home.name, home.id)
