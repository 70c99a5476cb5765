"""Contract of placement histories, home changes, home pages and versions on every adapter."""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from craig.domain.foster_home_changes import FosterHomeChange, change_foster_home
from craig.domain.keyset import Keyset
from craig.domain.placements import FosterHomeStatus, PlacementStatus
from craig.ports.errors import ConstraintViolation
from craig.ports.placements import OCCUPANCY_WITHIN_CAPACITY
from tests.contract.test_placement_repositories import SOMEONE, T0, a_case, a_placement, add_home
from tests.support.backends import Backend

pytestmark = pytest.mark.contract


async def test_histories_are_newest_first_in_keyset_pages(backend: Backend) -> None:
    uow = backend.uow()
    home = await add_home(uow, capacity=3)
    case_ids = [await a_case(uow) for _ in range(3)]
    made = []
    async with uow:
        for n, (case_id, status) in enumerate(
            [
                (case_ids[0], PlacementStatus.ACTIVE),
                (case_ids[0], PlacementStatus.PLANNED),
                (case_ids[1], PlacementStatus.ACTIVE),
                (case_ids[2], PlacementStatus.PLANNED),
            ]
        ):
            placement = attrs.evolve(a_placement(case_id, home.id, status), created_at=T0 + timedelta(minutes=n))
            await uow.placements.add(placement)
            made.append(placement)
        await uow.commit()
    async with uow:
        first = await uow.placements.list_for_case(case_ids[0], Keyset(limit=1))
        assert [p.id for p in first.items] == [made[1].id]
        rest = await uow.placements.list_for_case(case_ids[0], Keyset(limit=1, after=first.next_after))
        assert [p.id for p in rest.items] == [made[0].id] and rest.next_after is None
        every = await uow.placements.list_for_home(home.id, None, Keyset())
        assert [p.id for p in every.items] == [m.id for m in reversed(made)]
        active = await uow.placements.list_for_home(home.id, PlacementStatus.ACTIVE, Keyset())
        assert [p.id for p in active.items] == [made[2].id, made[0].id]
        assert await uow.placements.count_active_for_case(case_ids[0]) == 1
        assert await uow.placements.count_active_for_case(case_ids[2]) == 0


async def test_home_changes_and_versions(backend: Backend) -> None:
    uow = backend.uow()
    home = await add_home(uow, capacity=2)
    async with uow:
        occupied = await uow.foster_homes.adjust_occupancy(home.id, 1)
        assert occupied.version == 2
        changed, _ = change_foster_home(occupied, FosterHomeChange(name="Elm", capacity=1), by=SOMEONE, now=T0)
        await uow.foster_homes.update(changed)
        await uow.commit()
    async with uow:
        stored = await uow.foster_homes.get(home.id)
        assert stored == changed and (stored.name, stored.capacity, stored.version) == ("Elm", 1, 3)
        closed = attrs.evolve(stored, status=FosterHomeStatus.CLOSED, capacity=2, version=4)
        await uow.foster_homes.update(closed)
        await uow.commit()
    async with uow:
        assert await uow.foster_homes.get(home.id) == closed
    with pytest.raises(ConstraintViolation) as error:
        async with uow:
            await uow.foster_homes.adjust_occupancy(home.id, 1)
            await uow.foster_homes.update(attrs.evolve(closed, capacity=1))
            await uow.commit()
    assert error.value.constraint == OCCUPANCY_WITHIN_CAPACITY


async def test_home_pages_follow_the_name_order(backend: Backend) -> None:
    uow = backend.uow()
    for name in ["c", "a", "b", "a"]:
        await add_home(uow, name=name)
    seen, keyset = [], Keyset(limit=3)
    while True:
        async with uow:
            page = await uow.foster_homes.list_page(keyset)
        seen.extend(page.items)
        if page.next_after is None:
            break
        await add_home(uow, name="0 first")  # sorts before everything already read
        keyset = Keyset(limit=3, after=page.next_after)
    assert [h.name for h in seen] == ["a", "a", "b", "c"]
    assert len({h.id for h in seen}) == 4


async def test_a_placement_is_one_version_newer_per_update(backend: Backend) -> None:
    uow = backend.uow()
    home = await add_home(uow)
    placement = a_placement(await a_case(uow), home.id, PlacementStatus.PLANNED)
    async with uow:
        await uow.placements.add(placement)
        await uow.placements.update(attrs.evolve(placement, status=PlacementStatus.CANCELLED, version=2))
        await uow.commit()
    async with uow:
        stored = await uow.placements.get(placement.id)
    assert stored is not None and stored.version == 2
