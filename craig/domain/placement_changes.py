"""Placement commands and the pure decisions over them: new state, occupancy, events.

The use cases lock the rows (placement first, then homes in id order), call one decision here,
and write exactly what it returns. Moving a placement (``foster_home_id``) follows these rules:

* a planned placement may move to any existing home; its occupancy counts nowhere yet;
* an active placement moves with its place: the old home is vacated and the new one occupied
  (409 when the new home is full);
* a move may be combined with ``status: active`` only (move, then activate into the new home);
* an ended or cancelled placement never moves.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any
from uuid import UUID

import attrs

from craig.domain.errors import Conflict, InvalidInput
from craig.domain.event_catalogue import (
    FOSTER_HOME_CREATED,
    PLACEMENT_ACTIVATED,
    PLACEMENT_CANCELLED,
    PLACEMENT_CREATED,
    PLACEMENT_ENDED,
    PLACEMENT_MOVED,
    EventType,
)
from craig.domain.placements import (
    INITIAL_STATUSES,
    TERMINAL_STATUSES,
    EndReason,
    FosterHome,
    Placement,
    PlacementStatus,
    UnknownFosterHome,
    occupy,
    parse_end_reason,
    parse_status,
    require_open_home,
    vacate,
    validate_placement_transition,
)

_END_REASONS = ", ".join(reason.value for reason in EndReason)


class CaseAlreadyPlaced(Conflict):
    code = "case-already-placed"

    def __init__(self, case_id: UUID) -> None:
        super().__init__(f"case {case_id} already has an active placement; end it first")
        self.problem_extra: dict[str, Any] = {"case_id": str(case_id)}


class PlacementClosed(Conflict):
    code = "placement-closed"

    def __init__(self, placement: Placement) -> None:
        super().__init__(f"placement {placement.id} is {placement.status}; it can no longer change")
        self.problem_extra: dict[str, Any] = {"status": placement.status.value}


class PlacementNeedsHome(Conflict):
    code = "placement-needs-foster-home"

    def __init__(self, placement: Placement) -> None:
        super().__init__(f"placement {placement.id} has no foster home; activate it with foster_home_id")


@attrs.frozen(kw_only=True)
class PlacementEvent:
    """A fact to stage in the outbox (the use case wraps it in an envelope); ``type`` gives its
    source and aggregate type."""

    type: EventType
    aggregate_id: UUID
    payload: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class NewPlacement:
    case_id: UUID
    foster_home_id: UUID | None
    status: PlacementStatus
    start_date: date

    @classmethod
    def parse(cls, *, case_id: UUID, foster_home_id: UUID | None, status: str, start_date: date) -> NewPlacement:
        """Validate the request's shape; :class:`InvalidInput` (422)."""
        parsed = parse_status(status)
        if parsed not in INITIAL_STATUSES:
            raise InvalidInput(f"a placement starts planned or active, not {parsed}")
        if parsed is PlacementStatus.ACTIVE and foster_home_id is None:
            raise InvalidInput("an active placement needs foster_home_id")
        return cls(case_id=case_id, foster_home_id=foster_home_id, status=parsed, start_date=start_date)


@attrs.frozen(kw_only=True)
class PlacementPatch:
    status: PlacementStatus | None = None
    end_reason: EndReason | None = None
    foster_home_id: UUID | None = None

    @classmethod
    def parse(cls, *, status: str | None, end_reason: str | None, foster_home_id: UUID | None) -> PlacementPatch:
        """Validate the request's shape, before any lock is taken; :class:`InvalidInput` (422)."""
        target = parse_status(status) if status is not None else None
        reason = parse_end_reason(end_reason) if end_reason is not None else None
        if target is PlacementStatus.ENDED and reason is None:
            raise InvalidInput(f"ending a placement needs end_reason, one of {_END_REASONS}")
        if reason is not None and target is not PlacementStatus.ENDED:
            raise InvalidInput("end_reason is accepted only with status ended")
        if foster_home_id is not None and target not in (None, PlacementStatus.ACTIVE):
            raise InvalidInput(f"foster_home_id cannot change together with status {target}")
        if target is None and foster_home_id is None:
            raise InvalidInput("nothing to change: give status or foster_home_id")
        return cls(status=target, end_reason=reason, foster_home_id=foster_home_id)


@attrs.frozen(kw_only=True)
class PlacementDecision:
    placement: Placement
    #: Homes whose occupancy changes, with their new state.
    homes: tuple[FosterHome, ...] = ()
    #: Occupancy change per home id (+1 or -1), matching ``homes``.
    occupancy_deltas: Mapping[UUID, int] = attrs.field(factory=dict)
    events: tuple[PlacementEvent, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.events)


def homes_to_lock(current: Placement, patch: PlacementPatch) -> tuple[UUID, ...]:
    """The homes a change reads, in the one lock order: ascending id."""
    ids = {patch.foster_home_id} if patch.foster_home_id else set()
    if current.foster_home_id and (current.occupies_home or patch.status is PlacementStatus.ACTIVE):
        ids.add(current.foster_home_id)
    return tuple(sorted(ids))


def _event(kind: EventType, placement: Placement, **extra: Any) -> PlacementEvent:
    payload = {
        "placement_id": str(placement.id),
        "case_id": str(placement.case_id),
        "foster_home_id": str(placement.foster_home_id) if placement.foster_home_id else None,
        "status": placement.status.value,
        **extra,
    }
    return PlacementEvent(type=kind, aggregate_id=placement.id, payload=payload)


def _locked(homes: Mapping[UUID, FosterHome], home_id: UUID) -> FosterHome:
    """The locked home; :class:`UnknownFosterHome` (404) when the caller found none."""
    home = homes.get(home_id)
    if home is None:
        raise UnknownFosterHome(home_id)
    return home


def _occupancy(homes: Mapping[UUID, FosterHome], leaving: UUID | None, entering: UUID | None) -> dict[UUID, FosterHome]:
    if leaving == entering:
        return {}
    changed = {}
    if leaving is not None:
        changed[leaving] = vacate(_locked(homes, leaving))
    if entering is not None:
        changed[entering] = occupy(_locked(homes, entering))
    return changed


def _decision(
    before: Mapping[UUID, FosterHome],
    placement: Placement,
    changed: Mapping[UUID, FosterHome],
    events: list[PlacementEvent],
) -> PlacementDecision:
    deltas = {home_id: home.occupancy - before[home_id].occupancy for home_id, home in changed.items()}
    return PlacementDecision(
        placement=placement, homes=tuple(changed.values()), occupancy_deltas=deltas, events=tuple(events)
    )


def decide_new_placement(
    command: NewPlacement, *, id: UUID, created_by: UUID, home: FosterHome | None, now: datetime
) -> PlacementDecision:
    """A new placement in ``home``: the home ``command`` names (locked when the placement starts
    active, since it then takes a place), or None without one."""
    if (home.id if home else None) != command.foster_home_id:
        raise ValueError("home must be the home the command names")
    placement = Placement(
        id=id,
        case_id=command.case_id,
        foster_home_id=command.foster_home_id,
        status=command.status,
        start_date=command.start_date,
        created_by=created_by,
        created_at=now,
        updated_at=now,
    )
    if home is not None:
        require_open_home(home)
    homes = {home.id: home} if home else {}
    entering = home.id if home and placement.occupies_home else None
    changed = _occupancy(homes, None, entering)
    events = [_event(PLACEMENT_CREATED, placement, start_date=placement.start_date.isoformat())]
    if placement.occupies_home:
        events.append(_event(PLACEMENT_ACTIVATED, placement))
    return _decision(homes, placement, changed, events)


def decide_change(
    current: Placement, patch: PlacementPatch, homes: Mapping[UUID, FosterHome], now: datetime
) -> PlacementDecision:
    """Apply ``patch`` to the locked ``current`` placement; ``homes`` holds the locked
    :func:`homes_to_lock`. Raises 409 conflicts, and :class:`UnknownFosterHome` (404) for a home
    it needs that ``homes`` lacks; a request that changes nothing yields no events."""
    if patch.status is not None:
        validate_placement_transition(current.status, patch.status)
    elif current.status in TERMINAL_STATUSES:
        raise PlacementClosed(current)
    status = patch.status or current.status
    home_id = patch.foster_home_id or current.foster_home_id
    if status is PlacementStatus.ACTIVE and home_id is None:
        raise PlacementNeedsHome(current)
    leaving = current.foster_home_id if current.occupies_home else None
    entering = home_id if status is PlacementStatus.ACTIVE else None
    changed = _occupancy(homes, leaving, entering)
    moved = home_id != current.foster_home_id
    if not moved and patch.status is None:
        return PlacementDecision(placement=current)
    if moved and home_id is not None:
        require_open_home(_locked(homes, home_id))
    ended = status is PlacementStatus.ENDED
    placement = attrs.evolve(
        current,
        status=status,
        foster_home_id=home_id,
        end_reason=patch.end_reason if ended else current.end_reason,
        ended_at=now if ended else current.ended_at,
        updated_at=now,
        version=current.version + 1,
    )
    events = []
    if moved:
        previous = str(current.foster_home_id) if current.foster_home_id else None
        events.append(_event(PLACEMENT_MOVED, placement, from_foster_home_id=previous))
    if patch.status is PlacementStatus.ACTIVE:
        events.append(_event(PLACEMENT_ACTIVATED, placement))
    elif ended:
        events.append(_event(PLACEMENT_ENDED, placement, end_reason=str(patch.end_reason)))
    elif patch.status is PlacementStatus.CANCELLED:
        events.append(_event(PLACEMENT_CANCELLED, placement))
    return _decision(homes, placement, changed, events)


def foster_home_created(home: FosterHome) -> PlacementEvent:
    return PlacementEvent(
        type=FOSTER_HOME_CREATED,
        aggregate_id=home.id,
        payload={"foster_home_id": str(home.id), "capacity": home.capacity},
    )
