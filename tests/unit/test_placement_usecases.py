"""The placement use cases on the memory adapters: visibility, roles, effects, events, retries."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import attrs
import pytest

from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.memory.outbox import MemoryOutboxRelayStore
from craig.adapters.memory.uow import MemoryUnitOfWork
from craig.domain.access import Principal, Role
from craig.domain.cases import new_case
from craig.domain.errors import Forbidden, NotFound
from craig.domain.pages import PageRequest
from craig.domain.placement_changes import CaseAlreadyPlaced, NewPlacement, PlacementPatch
from craig.domain.placements import FosterHome, FosterHomeAtCapacity, PlacementStatus
from craig.ports.errors import TransientConflict
from craig.usecases.placements import (
    CreateFosterHome,
    CreatePlacement,
    GetPlacement,
    ListFosterHomes,
    UpdatePlacement,
)
from craig.usecases.transient_retry import TransientRetry
from tests.support.ciphers import TEST_CIPHER
from tests.support.clock import FakeClock

pytestmark = pytest.mark.unit

NO_PAUSE = TransientRetry(max_attempts=3, backoff=timedelta(0))


@attrs.define
class World:
    db: MemoryDatabase
    clock: FakeClock
    supervisor: Principal = attrs.field(factory=lambda: Principal(uuid.uuid4(), "Sue", Role.SUPERVISOR))
    worker: Principal = attrs.field(factory=lambda: Principal(uuid.uuid4(), "Wes", Role.CASEWORKER))

    def uow(self) -> MemoryUnitOfWork:
        return MemoryUnitOfWork(self.db, TEST_CIPHER)

    async def case(self, owner: Principal | None = None) -> uuid.UUID:
        now = self.clock.now()
        owner = owner or self.worker
        case = new_case(id=uuid.uuid4(), title="t", family_name=None, opened_at=now, created_by=owner.sub, now=now)
        uow = self.uow()
        async with uow:
            await uow.cases.add(case)
            await uow.commit()
        return case.id

    async def home(self, capacity: int = 2) -> FosterHome:
        return await CreateFosterHome(self.uow(), self.clock)(self.supervisor, name="Home", capacity=capacity)

    async def place(self, case_id: uuid.UUID, home: FosterHome | None, status: str = "active") -> Any:
        command = NewPlacement.parse(
            case_id=case_id, foster_home_id=home.id if home else None, status=status, start_date=date(2026, 1, 5)
        )
        return await CreatePlacement(self.uow(), self.clock)(self.worker, command)

    async def patch(self, placement_id: uuid.UUID, who: Principal | None = None, **fields: Any) -> Any:
        change = PlacementPatch.parse(
            status=fields.get("status"),
            end_reason=fields.get("end_reason"),
            foster_home_id=fields.get("foster_home_id"),
        )
        return await UpdatePlacement(self.uow(), self.clock, NO_PAUSE)(who or self.worker, placement_id, change)

    async def occupancy(self, home: FosterHome) -> int:
        uow = self.uow()
        async with uow:
            stored = await uow.foster_homes.get(home.id)
        assert stored is not None
        return stored.occupancy

    async def event_types(self) -> list[str]:
        async with MemoryOutboxRelayStore(self.db).claim_batch(1000) as batch:
            return [record.envelope.type for record in batch.events]


@pytest.fixture
async def world() -> AsyncIterator[World]:
    clock = FakeClock(datetime(2026, 1, 5, 9, tzinfo=UTC))
    yield World(MemoryDatabase(clock=clock), clock)


async def test_only_supervisors_and_admins_create_homes(world: World) -> None:
    with pytest.raises(Forbidden):
        await CreateFosterHome(world.uow(), world.clock)(world.worker, name="Home", capacity=1)
    home = await world.home(capacity=3)
    page = await ListFosterHomes(world.uow())(world.worker, PageRequest())
    assert page.items == [home] and page.total == 1
    assert await world.event_types() == ["placements.foster_home_created"]


async def test_a_placement_of_an_invisible_case_is_not_found(world: World) -> None:
    stranger = Principal(uuid.uuid4(), "Sam", Role.CASEWORKER)
    case_id = await world.case(owner=stranger)
    with pytest.raises(NotFound, match="case"):
        await world.place(case_id, await world.home())
    mine = await world.place(await world.case(), await world.home())
    with pytest.raises(NotFound, match="placement"):
        await GetPlacement(world.uow())(stranger, mine.id)
    with pytest.raises(NotFound, match="placement"):
        await world.patch(mine.id, who=stranger, status="ended", end_reason="moved")
    assert (await GetPlacement(world.uow())(world.supervisor, mine.id)).id == mine.id


async def test_activation_takes_a_place_and_a_full_home_refuses(world: World) -> None:
    home = await world.home(capacity=1)
    first = await world.place(await world.case(), home)
    assert first.status is PlacementStatus.ACTIVE and await world.occupancy(home) == 1
    with pytest.raises(FosterHomeAtCapacity):
        await world.place(await world.case(), home)
    planned = await world.place(await world.case(), home, status="planned")
    with pytest.raises(FosterHomeAtCapacity):
        await world.patch(planned.id, status="active")
    assert await world.occupancy(home) == 1
    assert await world.event_types() == [
        "placements.foster_home_created",
        "placements.placement_created",
        "placements.placement_activated",
        "placements.placement_created",
    ]


async def test_ending_frees_the_place_once(world: World) -> None:
    home = await world.home(capacity=1)
    placement = await world.place(await world.case(), home)
    ended = await world.patch(placement.id, status="ended", end_reason="adopted")
    assert ended.status is PlacementStatus.ENDED and ended.ended_at == world.clock.now()
    assert await world.occupancy(home) == 0
    with pytest.raises(Exception, match="cannot go from ended to ended"):
        await world.patch(placement.id, status="ended", end_reason="adopted")
    assert await world.occupancy(home) == 0
    assert (await world.event_types()).count("placements.placement_ended") == 1


async def test_a_case_cannot_be_placed_twice_at_once(world: World) -> None:
    case_id = await world.case()
    home = await world.home(capacity=3)
    await world.place(case_id, home)
    with pytest.raises(CaseAlreadyPlaced):
        await world.place(case_id, home)
    planned = await world.place(case_id, home, status="planned")
    with pytest.raises(CaseAlreadyPlaced):
        await world.patch(planned.id, status="active")
    assert await world.occupancy(home) == 1


async def test_moving_an_active_placement_moves_its_place(world: World) -> None:
    old, new = await world.home(), await world.home()
    placement = await world.place(await world.case(), old)
    moved = await world.patch(placement.id, foster_home_id=new.id)
    assert moved.foster_home_id == new.id
    assert (await world.occupancy(old), await world.occupancy(new)) == (0, 1)
    with pytest.raises(NotFound, match="foster home"):
        await world.patch(placement.id, foster_home_id=uuid.uuid4())


@attrs.define
class FlakyLocks:
    """Fault injection: the first ``failures`` placement locks report a deadlock."""

    inner: Any
    failures: int
    calls: int = 0

    async def get_placement_for_update(self, placement_id: uuid.UUID) -> Any:
        self.calls += 1
        if self.calls <= self.failures:
            raise TransientConflict("deadlock detected (injected)")
        return await self.inner.get_placement_for_update(placement_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize(("failures", "succeeds"), [(2, True), (3, False)])
async def test_transient_conflicts_rerun_the_whole_transaction_a_bounded_number_of_times(
    world: World, failures: int, succeeds: bool
) -> None:
    home = await world.home()
    placement = await world.place(await world.case(), home)
    uow = world.uow()
    flaky = FlakyLocks(uow.placements, failures)
    uow.placements = flaky  # type: ignore[assignment]
    change = PlacementPatch.parse(status="ended", end_reason="other", foster_home_id=None)
    if succeeds:
        ended = await UpdatePlacement(uow, world.clock, NO_PAUSE)(world.worker, placement.id, change)
        assert ended.status is PlacementStatus.ENDED and await world.occupancy(home) == 0
    else:
        with pytest.raises(TransientConflict):
            await UpdatePlacement(uow, world.clock, NO_PAUSE)(world.worker, placement.id, change)
        assert await world.occupancy(home) == 1
    assert flaky.calls == min(failures + 1, NO_PAUSE.max_attempts)
