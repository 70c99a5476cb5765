"""Placement rules as pure code: the transition table, request shapes, occupancy, decisions."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, date, datetime
from typing import Any

import pytest

from craig.domain.errors import Conflict, InvalidInput, NotFound
from craig.domain.event_catalogue import PLACEMENT_ACTIVATED, PLACEMENT_CREATED, PLACEMENT_ENDED, PLACEMENT_MOVED
from craig.domain.placement_changes import (
    NewPlacement,
    PlacementClosed,
    PlacementNeedsHome,
    PlacementPatch,
    decide_change,
    decide_new_placement,
    homes_to_lock,
)
from craig.domain.placements import (
    EndReason,
    FosterHome,
    FosterHomeAtCapacity,
    InvalidPlacementTransition,
    OccupancyUnderflow,
    Placement,
    PlacementStatus,
    UnknownFosterHome,
    new_foster_home,
    occupy,
    vacate,
    validate_placement_transition,
)

pytestmark = pytest.mark.unit

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
P, A, E, C = (
    PlacementStatus.PLANNED,
    PlacementStatus.ACTIVE,
    PlacementStatus.ENDED,
    PlacementStatus.CANCELLED,
)
ALLOWED = {(P, A), (P, C), (A, E)}


def home(capacity: int = 2, occupancy: int = 0) -> FosterHome:
    return FosterHome(
        id=uuid.uuid4(), name="Home", capacity=capacity, occupancy=occupancy, created_by=uuid.uuid4(), created_at=NOW
    )


def placement(status: PlacementStatus, home_id: uuid.UUID | None) -> Placement:
    ended = status is E
    return Placement(
        id=uuid.uuid4(),
        case_id=uuid.uuid4(),
        foster_home_id=home_id,
        status=status,
        start_date=date(2026, 1, 1),
        end_reason=EndReason.MOVED if ended else None,
        ended_at=NOW if ended else None,
        created_by=uuid.uuid4(),
        created_at=NOW,
        updated_at=NOW,
    )


@pytest.mark.parametrize(("current", "new"), list(itertools.product(PlacementStatus, repeat=2)))
def test_the_transition_table(current: PlacementStatus, new: PlacementStatus) -> None:
    if (current, new) in ALLOWED:
        validate_placement_transition(current, new)
        return
    with pytest.raises(InvalidPlacementTransition) as refused:
        validate_placement_transition(current, new)
    assert isinstance(refused.value, Conflict)
    assert refused.value.problem_extra == {"from": current.value, "to": new.value}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"status": "ended"}, "needs end_reason"),
        ({"status": "ended", "end_reason": "lost"}, "end_reason must be one of"),
        ({"status": "closed"}, "status must be one of"),
        ({"status": "active", "end_reason": "moved"}, "only with status ended"),
        ({"end_reason": "moved"}, "only with status ended"),
        ({"status": "cancelled", "foster_home_id": uuid.uuid4()}, "cannot change together"),
        ({}, "nothing to change"),
    ],
)
def test_malformed_patches_are_invalid_input(fields: dict[str, object], message: str) -> None:
    raw = {"status": None, "end_reason": None, "foster_home_id": None, **fields}
    with pytest.raises(InvalidInput, match=message):
        PlacementPatch.parse(**raw)  # type: ignore[arg-type]


def test_every_end_reason_is_accepted() -> None:
    for reason in ("reunified", "adopted", "moved", "disrupted", "aged_out", "other"):
        patch = PlacementPatch.parse(status="ended", end_reason=reason, foster_home_id=None)
        assert patch.end_reason == EndReason(reason)


@pytest.mark.parametrize(
    ("status", "home_id", "message"),
    [("ended", uuid.uuid4(), "starts planned or active"), ("active", None, "needs foster_home_id")],
)
def test_malformed_new_placements(status: str, home_id: uuid.UUID | None, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        NewPlacement.parse(case_id=uuid.uuid4(), foster_home_id=home_id, status=status, start_date=date.today())


@pytest.mark.parametrize(("name", "capacity"), [("", 1), ("  ", 2), ("x" * 201, 1), ("Ok", 0), ("Ok", True)])
def test_new_foster_home_validates(name: str, capacity: int) -> None:
    with pytest.raises(InvalidInput):
        new_foster_home(id=uuid.uuid4(), name=name, capacity=capacity, created_by=uuid.uuid4(), now=NOW)


def test_occupancy_stays_within_zero_and_capacity() -> None:
    full = occupy(occupy(home(capacity=2)))
    assert full.occupancy == 2 and full.is_full
    with pytest.raises(FosterHomeAtCapacity) as refused:
        occupy(full)
    assert refused.value.problem_extra["capacity"] == 2
    with pytest.raises(OccupancyUnderflow):
        vacate(home())
    with pytest.raises(ValueError):
        home(capacity=1, occupancy=2)


def test_new_active_placement_occupies_its_home_and_announces_itself() -> None:
    h = home(capacity=1)
    command = NewPlacement.parse(case_id=uuid.uuid4(), foster_home_id=h.id, status="active", start_date=date.today())
    decision = decide_new_placement(command, id=uuid.uuid4(), created_by=uuid.uuid4(), home=h, now=NOW)
    assert decision.occupancy_deltas == {h.id: 1}
    assert [e.type for e in decision.events] == [PLACEMENT_CREATED, PLACEMENT_ACTIVATED]
    with pytest.raises(FosterHomeAtCapacity):
        decide_new_placement(command, id=uuid.uuid4(), created_by=uuid.uuid4(), home=decision.homes[0], now=NOW)


def test_ending_frees_the_place_and_records_the_reason() -> None:
    h = home(occupancy=1)
    current = placement(A, h.id)
    patch = PlacementPatch.parse(status="ended", end_reason="reunified", foster_home_id=None)
    decision = decide_change(current, patch, {h.id: h}, NOW)
    assert decision.placement.status is E and decision.placement.end_reason is EndReason.REUNIFIED
    assert decision.placement.ended_at == NOW
    assert decision.occupancy_deltas == {h.id: -1} and decision.homes[0].occupancy == 0
    (event,) = decision.events
    assert event.type == PLACEMENT_ENDED and event.payload["end_reason"] == "reunified"


def test_moving_an_active_placement_moves_its_place() -> None:
    old, new = home(occupancy=1), home(capacity=1)
    current = placement(A, old.id)
    patch = PlacementPatch.parse(status=None, end_reason=None, foster_home_id=new.id)
    assert homes_to_lock(current, patch) == tuple(sorted([old.id, new.id]))
    decision = decide_change(current, patch, {old.id: old, new.id: new}, NOW)
    assert decision.occupancy_deltas == {old.id: -1, new.id: 1}
    assert [e.type for e in decision.events] == [PLACEMENT_MOVED]
    assert decision.events[0].payload["from_foster_home_id"] == str(old.id)
    with pytest.raises(FosterHomeAtCapacity):
        decide_change(current, patch, {old.id: old, new.id: occupy(new)}, NOW)


def test_moving_a_planned_placement_counts_nowhere() -> None:
    old, new = home(), home(capacity=1, occupancy=1)
    current = placement(P, old.id)
    patch = PlacementPatch.parse(status=None, end_reason=None, foster_home_id=new.id)
    assert homes_to_lock(current, patch) == (new.id,)
    decision = decide_change(current, patch, {new.id: new}, NOW)
    assert decision.placement.foster_home_id == new.id and decision.occupancy_deltas == {}


def test_move_and_activate_in_one_patch_occupies_the_new_home() -> None:
    old, new = home(), home()
    current = placement(P, old.id)
    patch = PlacementPatch.parse(status="active", end_reason=None, foster_home_id=new.id)
    decision = decide_change(current, patch, {old.id: old, new.id: new}, NOW)
    assert decision.occupancy_deltas == {new.id: 1}
    assert [e.type for e in decision.events] == [PLACEMENT_MOVED, PLACEMENT_ACTIVATED]


def test_closed_and_homeless_placements_are_conflicts() -> None:
    h = home()
    move = PlacementPatch.parse(status=None, end_reason=None, foster_home_id=h.id)
    with pytest.raises(PlacementClosed):
        decide_change(placement(E, None), move, {h.id: h}, NOW)
    activate = PlacementPatch.parse(status="active", end_reason=None, foster_home_id=None)
    with pytest.raises(PlacementNeedsHome):
        decide_change(placement(P, None), activate, {}, NOW)


def test_a_patch_that_changes_nothing_has_no_effect() -> None:
    h = home(occupancy=1)
    current = placement(A, h.id)
    patch = PlacementPatch.parse(status=None, end_reason=None, foster_home_id=h.id)
    decision = decide_change(current, patch, {h.id: h}, NOW)
    assert decision.placement == current and not decision.changed and decision.occupancy_deltas == {}


@pytest.mark.parametrize(
    ("status", "patch"),
    [
        (A, {"status": "ended", "end_reason": "moved"}),  # the home it leaves
        (P, {"status": "active"}),  # the home it enters
        (A, {"foster_home_id": uuid.UUID(int=7)}),  # both
    ],
)
def test_a_home_the_decision_needs_but_was_not_given_is_not_found(
    status: PlacementStatus, patch: dict[str, Any]
) -> None:
    current = placement(status, uuid.uuid4())
    change = PlacementPatch.parse(**{"status": None, "end_reason": None, "foster_home_id": None, **patch})
    with pytest.raises(UnknownFosterHome) as missing:
        decide_change(current, change, {}, NOW)
    assert isinstance(missing.value, NotFound) and missing.value.ident in homes_to_lock(current, change)
    assert missing.value.problem_extra == {"foster_home_id": str(missing.value.ident)}
