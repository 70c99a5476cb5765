"""Contract of FosterHomeRepository and PlacementRepository on every adapter."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, date, datetime, timedelta

import attrs
import pytest
from sqlalchemy import text

from craig.domain.cases import new_case
from craig.domain.errors import NotFound
from craig.domain.pages import PageRequest
from craig.domain.placements import (
    EndReason,
    FosterHome,
    Placement,
    PlacementStatus,
    UnknownFosterHome,
    UnknownPlacement,
    new_foster_home,
)
from craig.ports.errors import ConstraintViolation
from craig.ports.placements import (
    OCCUPANCY_WITHIN_CAPACITY,
    ONE_ACTIVE_PLACEMENT_PER_CASE,
    PLACEMENT_ACTIVE_HAS_HOME,
    PLACEMENT_CASE_FK,
    PLACEMENT_ENDED_HAS_REASON,
    PLACEMENT_FOSTER_HOME_FK,
)
from craig.ports.unit_of_work import UnitOfWork
from tests.support.backends import Backend

pytestmark = pytest.mark.contract

T0 = datetime(2026, 2, 1, tzinfo=UTC)
SOMEONE = uuid.uuid4()


def a_home(name: str = "Home", capacity: int = 2) -> FosterHome:
    return new_foster_home(id=uuid.uuid4(), name=name, capacity=capacity, created_by=SOMEONE, now=T0)


def a_placement(case_id: uuid.UUID, home_id: uuid.UUID | None, status: PlacementStatus) -> Placement:
    return Placement(
        id=uuid.uuid4(),
        case_id=case_id,
        foster_home_id=home_id,
        status=status,
        start_date=date(2026, 2, 1),
        created_by=SOMEONE,
        created_at=T0,
        updated_at=T0,
    )


async def a_case(uow: UnitOfWork) -> uuid.UUID:
    case = new_case(id=uuid.uuid4(), title="c", family_name=None, opened_at=T0, created_by=SOMEONE, now=T0)
    async with uow:
        await uow.cases.add(case)
        await uow.commit()
    return case.id


async def add_home(uow: UnitOfWork, **kw: object) -> FosterHome:
    home = a_home(**kw)  # type: ignore[arg-type]
    async with uow:
        await uow.foster_homes.add(home)
        await uow.commit()
    return home


async def refused(uow: UnitOfWork, write: object, constraint: str) -> None:
    """``write`` (a coroutine factory) raises the named ConstraintViolation; nothing is kept."""
    with pytest.raises(ConstraintViolation) as error:
        async with uow:
            await write()  # type: ignore[operator]
            await uow.commit()
    assert error.value.constraint == constraint


async def test_homes_roundtrip_list_by_name_and_refuse_duplicates(backend: Backend) -> None:
    uow = backend.uow()
    homes = [await add_home(uow, name=name) for name in ("Cedar", "Alder", "Birch")]
    async with uow:
        assert await uow.foster_homes.get(homes[0].id) == homes[0]
        assert await uow.foster_homes.get(uuid.uuid4()) is None
        first = await uow.foster_homes.list_by_name(PageRequest(page=1, per_page=2))
        second = await uow.foster_homes.list_by_name(PageRequest(page=2, per_page=2))
    assert [h.name for h in first.items] == ["Alder", "Birch"] and first.total == 3
    assert [h.name for h in second.items] == ["Cedar"] and second.total == 3
    await refused(uow, lambda: uow.foster_homes.add(homes[0]), "foster_homes_pkey")


async def test_occupancy_moves_within_zero_and_capacity_only(backend: Backend) -> None:
    uow = backend.uow()
    home = await add_home(uow, capacity=2)
    async with uow:
        assert (await uow.foster_homes.adjust_occupancy(home.id, 1)).occupancy == 1
        assert (await uow.foster_homes.adjust_occupancy(home.id, 1)).occupancy == 2
        await uow.commit()
    await refused(uow, lambda: uow.foster_homes.adjust_occupancy(home.id, 1), OCCUPANCY_WITHIN_CAPACITY)
    await refused(uow, lambda: uow.foster_homes.adjust_occupancy(home.id, -3), OCCUPANCY_WITHIN_CAPACITY)
    async with uow:
        stored = await uow.foster_homes.get_foster_home_for_update(home.id)
        assert stored is not None and stored.occupancy == 2
        with pytest.raises(LookupError):
            await uow.foster_homes.adjust_occupancy(uuid.uuid4(), 1)


async def test_homes_lock_together_and_unknown_ids_are_absent(backend: Backend) -> None:
    uow = backend.uow()
    a, b = await add_home(uow), await add_home(uow)
    unknown = uuid.uuid4()
    async with uow:
        locked = await uow.foster_homes.get_foster_homes_for_update([b.id, unknown, a.id])
    assert dict(locked) == {a.id: a, b.id: b}


async def test_placements_roundtrip_and_update_changes_only_mutable_columns(backend: Backend) -> None:
    uow = backend.uow()
    case_id, home = await a_case(uow), await add_home(uow)
    placement = a_placement(case_id, home.id, PlacementStatus.ACTIVE)
    async with uow:
        await uow.placements.add(placement)
        await uow.commit()
    later = T0 + timedelta(days=3)
    ended = attrs.evolve(
        placement, status=PlacementStatus.ENDED, end_reason=EndReason.AGED_OUT, ended_at=later, updated_at=later
    )
    async with uow:
        assert await uow.placements.get_placement_for_update(placement.id) == placement
        await uow.placements.update(attrs.evolve(ended, start_date=date(1999, 1, 1), created_by=uuid.uuid4()))
        await uow.commit()
    async with uow:
        assert await uow.placements.get(placement.id) == ended
        assert await uow.placements.get(uuid.uuid4()) is None
        with pytest.raises(LookupError):
            await uow.placements.update(a_placement(case_id, None, PlacementStatus.PLANNED))


async def test_unknown_homes_and_placements_are_not_found_naming_the_id(backend: Backend) -> None:
    """The domain's 404, so a missing row never reaches a client as a 500."""
    uow = backend.uow()
    case_id, unknown_home, unknown = (
        await a_case(uow),
        uuid.uuid4(),
        a_placement(uuid.uuid4(), None, PlacementStatus.PLANNED),
    )
    async with uow:
        with pytest.raises(UnknownFosterHome) as home:
            await uow.foster_homes.adjust_occupancy(unknown_home, 1)
        with pytest.raises(UnknownPlacement) as placement:
            await uow.placements.update(attrs.evolve(unknown, case_id=case_id))
    assert isinstance(home.value, NotFound) and home.value.ident == unknown_home
    assert isinstance(placement.value, NotFound) and placement.value.ident == unknown.id


async def test_a_case_has_at_most_one_active_placement(backend: Backend) -> None:
    uow = backend.uow()
    case_id, home = await a_case(uow), await add_home(uow)
    active = a_placement(case_id, home.id, PlacementStatus.ACTIVE)
    planned = [a_placement(case_id, home.id, PlacementStatus.PLANNED) for _ in range(2)]
    async with uow:
        for placement in (active, *planned):
            await uow.placements.add(placement)
        await uow.commit()
    second = a_placement(case_id, home.id, PlacementStatus.ACTIVE)
    await refused(uow, lambda: uow.placements.add(second), ONE_ACTIVE_PLACEMENT_PER_CASE)
    activated = attrs.evolve(planned[0], status=PlacementStatus.ACTIVE)
    await refused(uow, lambda: uow.placements.update(activated), ONE_ACTIVE_PLACEMENT_PER_CASE)
    async with uow:  # once the first has ended, another may become active
        await uow.placements.update(
            attrs.evolve(active, status=PlacementStatus.ENDED, end_reason=EndReason.MOVED, ended_at=T0)
        )
        await uow.placements.update(activated)
        await uow.commit()
    async with uow:
        assert await uow.placements.count_active_in(home.id) == 1


async def test_placements_need_a_known_case_and_home_and_consistent_columns(backend: Backend) -> None:
    uow = backend.uow()
    case_id, home = await a_case(uow), await add_home(uow)
    cases: list[tuple[Placement, str]] = [
        (a_placement(uuid.uuid4(), home.id, PlacementStatus.PLANNED), PLACEMENT_CASE_FK),
        (a_placement(case_id, uuid.uuid4(), PlacementStatus.PLANNED), PLACEMENT_FOSTER_HOME_FK),
        (a_placement(case_id, None, PlacementStatus.ACTIVE), PLACEMENT_ACTIVE_HAS_HOME),
        (a_placement(case_id, home.id, PlacementStatus.ENDED), PLACEMENT_ENDED_HAS_REASON),
        (
            attrs.evolve(a_placement(case_id, home.id, PlacementStatus.PLANNED), end_reason=EndReason.OTHER),
            PLACEMENT_ENDED_HAS_REASON,
        ),
    ]
    for placement, constraint in cases:
        await refused(uow, lambda p=placement: uow.placements.add(p), constraint)  # type: ignore[misc]
    async with uow:
        assert await uow.placements.count_active_in(home.id) == 0


async def test_uncommitted_writes_are_rolled_back(backend: Backend) -> None:
    uow = backend.uow()
    case_id, home = await a_case(uow), await add_home(uow)
    placement = a_placement(case_id, home.id, PlacementStatus.ACTIVE)
    async with uow:
        await uow.placements.add(placement)
        await uow.foster_homes.adjust_occupancy(home.id, 1)
    async with uow:
        assert await uow.placements.get(placement.id) is None
        assert await uow.foster_homes.get(home.id) == home


async def test_stats_show_full_homes_and_occupancy_drift(backend: Backend) -> None:
    uow = backend.uow()
    case_id = await a_case(uow)
    full = await add_home(uow, name="Full", capacity=1)
    drifted = await add_home(uow, name="Drifted", capacity=3)
    await add_home(uow, name="Empty")
    async with uow:
        await uow.placements.add(a_placement(case_id, full.id, PlacementStatus.ACTIVE))
        await uow.foster_homes.adjust_occupancy(full.id, 1)
        await uow.foster_homes.adjust_occupancy(drifted.id, 1)  # no active placement behind it
        await uow.commit()
    async with uow:
        stats = await uow.foster_homes.stats(sample=5)
        none_shown = await uow.foster_homes.stats(sample=0)
    assert (stats.homes, stats.at_capacity) == (3, 1)
    assert [h.name for h in stats.full_homes] == ["Full"] and none_shown.full_homes == []
    assert list(stats.drifted) == [drifted.id]


async def _second_waits(backend: Backend) -> None:
    """Return once another transaction is blocked (PostgreSQL: waiting on a lock)."""
    if backend.postgres is None:
        for _ in range(5):  # the memory database serializes whole transactions
            await asyncio.sleep(0.01)
        return
    async with backend.postgres.connect() as conn:
        for _ in range(1000):
            waiting = (
                await conn.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
                    )
                )
            ).scalar_one()
            if waiting:
                return
            await asyncio.sleep(0.01)
    raise AssertionError("the second transaction never waited for the row lock")


@pytest.mark.parametrize("row", ["placement", "home"])
async def test_a_locked_row_makes_the_next_locker_wait_for_the_commit(backend: Backend, row: str) -> None:
    setup = backend.uow()
    case_id, home = await a_case(setup), await add_home(setup)
    placement = a_placement(case_id, home.id, PlacementStatus.PLANNED)
    async with setup:
        await setup.placements.add(placement)
        await setup.commit()
    first, second = backend.uow(), backend.uow()
    locked = asyncio.Event()

    async def lock(uow: UnitOfWork) -> object:
        if row == "placement":
            return await uow.placements.get_placement_for_update(placement.id)
        return await uow.foster_homes.get_foster_home_for_update(home.id)

    async def writer() -> None:
        async with first:
            await lock(first)
            locked.set()
            await _second_waits(backend)
            if row == "placement":
                await first.placements.update(attrs.evolve(placement, status=PlacementStatus.CANCELLED))
            else:
                await first.foster_homes.adjust_occupancy(home.id, 1)
            await first.commit()

    async def reader() -> object:
        await locked.wait()
        async with second:
            seen = await lock(second)
            await second.commit()
        return seen

    _, seen = await asyncio.gather(writer(), reader())
    if row == "placement":
        assert isinstance(seen, Placement) and seen.status is PlacementStatus.CANCELLED
    else:
        assert isinstance(seen, FosterHome) and seen.occupancy == 1
