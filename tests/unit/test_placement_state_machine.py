"""Random placements, transitions and moves across several homes; the invariants always hold.

The machine plays the use cases' part: it locks what :func:`homes_to_lock` names, calls the pure
decision, and writes what it returns, refusing a second active placement of a case as the
partial unique index does. An independent oracle predicts every refusal.
"""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from craig.domain.errors import DomainError, InvalidInput
from craig.domain.event_catalogue import PLACEMENT_ACTIVATED, PLACEMENT_CANCELLED, PLACEMENT_ENDED, PLACEMENT_MOVED
from craig.domain.placement_changes import (
    NewPlacement,
    PlacementClosed,
    PlacementDecision,
    PlacementNeedsHome,
    PlacementPatch,
    decide_change,
    decide_new_placement,
    homes_to_lock,
)
from craig.domain.placements import (
    FosterHome,
    FosterHomeAtCapacity,
    InvalidPlacementTransition,
    Placement,
    PlacementStatus,
    new_foster_home,
)

pytestmark = pytest.mark.unit

PLANNED, ACTIVE, ENDED, CANCELLED = "planned", "active", "ended", "cancelled"
ALLOWED = {(PLANNED, ACTIVE), (PLANNED, CANCELLED), (ACTIVE, ENDED)}
CASES = [uuid.UUID(int=n) for n in range(1, 5)]
STATUS_WORDS = st.sampled_from([None, PLANNED, ACTIVE, ENDED, CANCELLED])
REASON_WORDS = st.sampled_from([None, "reunified", "aged_out", "other"])


def oracle(current: Placement, patch: PlacementPatch, homes: dict[uuid.UUID, FosterHome]) -> type | None:
    """The refusal the rules call for, written independently of the domain code."""
    if patch.status is not None:
        if (current.status.value, patch.status.value) not in ALLOWED:
            return InvalidPlacementTransition
    elif current.status.value in (ENDED, CANCELLED):
        return PlacementClosed
    status = (patch.status or current.status).value
    home_id = patch.foster_home_id or current.foster_home_id
    if status == ACTIVE and home_id is None:
        return PlacementNeedsHome
    takes_a_new_place = current.status.value != ACTIVE or home_id != current.foster_home_id
    if status == ACTIVE and takes_a_new_place and homes[home_id].occupancy >= homes[home_id].capacity:  # type: ignore[index]
        return FosterHomeAtCapacity
    return None


class PlacementMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = datetime(2026, 1, 1, tzinfo=UTC)
        self.homes: dict[uuid.UUID, FosterHome] = {}
        self.placements: dict[uuid.UUID, Placement] = {}
        self.closed: dict[uuid.UUID, Placement] = {}
        self.ids = 1000

    def _id(self) -> uuid.UUID:
        # Deterministic ids: Hypothesis replays a run only if the same draws pick the same rows.
        self.ids += 1
        return uuid.UUID(int=self.ids)

    def _tick(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now

    def _apply(self, decision: PlacementDecision, before: Placement | None) -> bool:
        """Write the decision as a repository would; False when the unique index refuses it."""
        new = decision.placement
        if new.status is PlacementStatus.ACTIVE and any(
            p.case_id == new.case_id and p.status is PlacementStatus.ACTIVE and p.id != new.id
            for p in self.placements.values()
        ):
            return False
        was_active = before is not None and before.status is PlacementStatus.ACTIVE
        is_active = new.status is PlacementStatus.ACTIVE
        assert sum(decision.occupancy_deltas.values()) == int(is_active) - int(was_active)
        for changed in decision.homes:
            # Each changed home gains the place the placement now holds and loses the one it held.
            gains = int(is_active and new.foster_home_id == changed.id)
            loses = int(was_active and before is not None and before.foster_home_id == changed.id)
            assert decision.occupancy_deltas[changed.id] == gains - loses != 0
            assert changed.occupancy == self.homes[changed.id].occupancy + gains - loses
            self.homes[changed.id] = changed
        self.placements[new.id] = new
        return True

    @precondition(lambda self: len(self.homes) < 4)
    @rule(capacity=st.integers(min_value=1, max_value=3))
    def add_home(self, capacity: int) -> None:
        home = new_foster_home(id=self._id(), name="home", capacity=capacity, created_by=CASES[0], now=self._tick())
        self.homes[home.id] = home

    @precondition(lambda self: self.homes)
    @rule(data=st.data(), status=st.sampled_from([PLANNED, ACTIVE]), case=st.sampled_from(CASES))
    def place(self, data: st.DataObject, status: str, case: uuid.UUID) -> None:
        home_id = data.draw(st.sampled_from([None, *sorted(self.homes)]))
        try:
            command = NewPlacement.parse(case_id=case, foster_home_id=home_id, status=status, start_date=date.today())
        except InvalidInput:
            assert status == ACTIVE and home_id is None
            return
        home = self.homes[home_id] if home_id else None
        full = home is not None and home.occupancy >= home.capacity
        try:
            decision = decide_new_placement(command, id=self._id(), created_by=CASES[0], home=home, now=self._tick())
        except FosterHomeAtCapacity:
            assert status == ACTIVE and full
            return
        assert not (status == ACTIVE and full)
        self._apply(decision, None)

    @precondition(lambda self: self.placements)
    @rule(data=st.data(), status=STATUS_WORDS, reason=REASON_WORDS, move=st.booleans())
    def change(self, data: st.DataObject, status: str | None, reason: str | None, move: bool) -> None:
        current = self.placements[data.draw(st.sampled_from(sorted(self.placements)))]
        target = data.draw(st.sampled_from(sorted(self.homes))) if move else None
        try:
            patch = PlacementPatch.parse(status=status, end_reason=reason, foster_home_id=target)
        except InvalidInput:
            return
        locked = {home_id: self.homes[home_id] for home_id in homes_to_lock(current, patch)}
        expected = oracle(current, patch, self.homes)
        try:
            decision = decide_change(current, patch, locked, self._tick())
        except DomainError as error:
            assert type(error) is expected, (error, expected)
            if isinstance(error, InvalidPlacementTransition):
                assert error.problem_extra == {"from": current.status.value, "to": status}
            return
        assert expected is None
        types = [event.type for event in decision.events]
        if patch.status is not None:
            wanted = {
                ACTIVE: PLACEMENT_ACTIVATED,
                ENDED: PLACEMENT_ENDED,
                CANCELLED: PLACEMENT_CANCELLED,
            }[patch.status.value]
            assert types[-1] == wanted
        assert (PLACEMENT_MOVED in types) == (target is not None and target != current.foster_home_id)
        self._apply(decision, current)

    @invariant()
    def occupancy_counts_active_placements(self) -> None:
        active = Counter(p.foster_home_id for p in self.placements.values() if p.status is PlacementStatus.ACTIVE)
        for home in self.homes.values():
            assert 0 <= home.occupancy <= home.capacity
            assert home.occupancy == active[home.id]

    @invariant()
    def a_case_has_at_most_one_active_placement(self) -> None:
        active = Counter(p.case_id for p in self.placements.values() if p.status is PlacementStatus.ACTIVE)
        assert all(count <= 1 for count in active.values())

    @invariant()
    def closed_placements_never_change(self) -> None:
        for placement in self.placements.values():
            if placement.status in (PlacementStatus.ENDED, PlacementStatus.CANCELLED):
                assert self.closed.setdefault(placement.id, placement) == placement
            assert (placement.status is PlacementStatus.ENDED) == (placement.end_reason is not None)
            assert placement.status is not PlacementStatus.ACTIVE or placement.foster_home_id is not None


TestPlacementMachine = PlacementMachine.TestCase
