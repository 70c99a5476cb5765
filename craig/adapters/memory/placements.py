"""Memory adapters of the foster-home and placement repositories.

The memory database runs one transaction at a time, so every read is already a locked read;
the ``*_for_update`` methods differ from ``get`` only in intent. The constraints of migration
0007 (CHECKs, foreign keys, the one-active-placement index) are enforced here as well, under
the same names, so the contract suite holds on both adapters.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping
from uuid import UUID

import attrs

from craig.adapters.memory.cases import CASES
from craig.adapters.memory.session import MemorySession
from craig.domain.access import Principal
from craig.domain.cases import can_see
from craig.domain.keyset import Keyset, KeysetPage, after, keyset_page
from craig.domain.pages import Page, PageRequest
from craig.domain.placements import (
    FosterHome,
    Placement,
    PlacementStatus,
    UnknownFosterHome,
    UnknownPlacement,
    history_key,
    home_key,
)
from craig.ports.errors import ConstraintViolation
from craig.ports.placements import (
    OCCUPANCY_WITHIN_CAPACITY,
    ONE_ACTIVE_PLACEMENT_PER_CASE,
    PLACEMENT_ACTIVE_HAS_HOME,
    PLACEMENT_CASE_FK,
    PLACEMENT_ENDED_HAS_REASON,
    PLACEMENT_FOSTER_HOME_FK,
    FosterHomeRepository,
    FosterHomeStats,
    PlacementRepository,
)

FOSTER_HOMES = "foster_homes"
PLACEMENTS = "placements"


class MemoryFosterHomeRepository(FosterHomeRepository):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    async def add(self, home: FosterHome) -> None:
        if not (await self.session.tx()).insert(FOSTER_HOMES, home.id, home):
            raise ConstraintViolation("foster_homes_pkey", f"foster home {home.id} exists")

    async def get(self, home_id: UUID) -> FosterHome | None:
        home: FosterHome | None = (await self.session.tx()).get(FOSTER_HOMES, home_id)
        return home

    async def get_foster_home_for_update(self, home_id: UUID) -> FosterHome | None:
        return await self.get(home_id)

    async def get_foster_homes_for_update(self, home_ids: Collection[UUID]) -> Mapping[UUID, FosterHome]:
        locked = {}
        for home_id in sorted(set(home_ids)):
            home = await self.get_foster_home_for_update(home_id)
            if home is not None:
                locked[home_id] = home
        return locked

    async def adjust_occupancy(self, home_id: UUID, delta: int) -> FosterHome:
        home = await self.get(home_id)
        if home is None:
            raise UnknownFosterHome(home_id)
        occupancy = home.occupancy + delta
        if not 0 <= occupancy <= home.capacity:
            raise ConstraintViolation(OCCUPANCY_WITHIN_CAPACITY, f"occupancy {occupancy} outside 0..{home.capacity}")
        updated = attrs.evolve(home, occupancy=occupancy, version=home.version + 1)
        (await self.session.tx()).put(FOSTER_HOMES, home_id, updated)
        return updated

    async def update(self, home: FosterHome) -> None:
        stored = await self.get(home.id)
        if stored is None:
            return
        if home.capacity < stored.occupancy:
            raise ConstraintViolation(OCCUPANCY_WITHIN_CAPACITY, f"capacity {home.capacity} below occupancy")
        changed = attrs.evolve(stored, name=home.name, capacity=home.capacity, status=home.status, version=home.version)
        (await self.session.tx()).put(FOSTER_HOMES, home.id, changed)

    async def list_page(self, keyset: Keyset) -> KeysetPage[FosterHome]:
        homes: list[FosterHome] = sorted(
            (await self.session.tx()).select(FOSTER_HOMES, lambda h: after(home_key(h), keyset, (False, False))),
            key=home_key,
        )
        return keyset_page(homes[: keyset.limit + 1], keyset, home_key)

    async def list_by_name(self, page: PageRequest) -> Page[FosterHome]:
        homes = sorted((await self.session.tx()).rows(FOSTER_HOMES), key=lambda home: (home.name, home.id))
        items = homes[page.offset : page.offset + page.per_page]
        return Page(items=items, page=page.page, per_page=page.per_page, total=len(homes))

    async def stats(self, sample: int) -> FosterHomeStats:
        homes: list[FosterHome] = sorted((await self.session.tx()).rows(FOSTER_HOMES), key=lambda h: (h.name, h.id))
        active = Counter(
            p.foster_home_id for p in (await self.session.tx()).rows(PLACEMENTS) if p.status is PlacementStatus.ACTIVE
        )
        full = [home for home in homes if home.is_full]
        return FosterHomeStats(
            homes=len(homes),
            at_capacity=len(full),
            full_homes=full[:sample],
            drifted=sorted(home.id for home in homes if home.occupancy != active[home.id]),
        )


class MemoryPlacementRepository(PlacementRepository):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    async def _check(self, placement: Placement) -> None:
        tx = await self.session.tx()
        ended = placement.status is PlacementStatus.ENDED
        if not ended == (placement.end_reason is not None) == (placement.ended_at is not None):
            raise ConstraintViolation(PLACEMENT_ENDED_HAS_REASON, "ended if and only if a reason is set")
        if placement.status is PlacementStatus.ACTIVE and placement.foster_home_id is None:
            raise ConstraintViolation(PLACEMENT_ACTIVE_HAS_HOME, "an active placement needs a home")
        if tx.get(CASES, placement.case_id) is None:
            raise ConstraintViolation(PLACEMENT_CASE_FK, f"case {placement.case_id} does not exist")
        if placement.foster_home_id is not None and tx.get(FOSTER_HOMES, placement.foster_home_id) is None:
            raise ConstraintViolation(
                PLACEMENT_FOSTER_HOME_FK, f"foster home {placement.foster_home_id} does not exist"
            )
        if placement.status is PlacementStatus.ACTIVE and tx.select(
            PLACEMENTS,
            lambda other: (
                other.case_id == placement.case_id
                and other.status is PlacementStatus.ACTIVE
                and other.id != placement.id
            ),
        ):
            raise ConstraintViolation(
                ONE_ACTIVE_PLACEMENT_PER_CASE, f"case {placement.case_id} has an active placement"
            )

    async def add(self, placement: Placement) -> None:
        if (await self.session.tx()).get(PLACEMENTS, placement.id) is not None:
            raise ConstraintViolation("placements_pkey", f"placement {placement.id} exists")
        await self._check(placement)
        (await self.session.tx()).put(PLACEMENTS, placement.id, placement)

    async def get(self, placement_id: UUID) -> Placement | None:
        placement: Placement | None = (await self.session.tx()).get(PLACEMENTS, placement_id)
        return placement

    async def get_placement_for_update(self, placement_id: UUID) -> Placement | None:
        return await self.get(placement_id)

    async def update(self, placement: Placement) -> None:
        stored: Placement | None = (await self.session.tx()).get(PLACEMENTS, placement.id)
        if stored is None:
            raise UnknownPlacement(placement.id)
        await self._check(placement)
        # Only the mutable columns change, as in the SQL UPDATE.
        (await self.session.tx()).put(
            PLACEMENTS,
            placement.id,
            attrs.evolve(
                stored,
                status=placement.status,
                foster_home_id=placement.foster_home_id,
                end_reason=placement.end_reason,
                ended_at=placement.ended_at,
                updated_at=placement.updated_at,
                version=placement.version,
            ),
        )

    async def count_active_in(self, home_id: UUID) -> int:
        return len(
            (await self.session.tx()).select(
                PLACEMENTS,
                lambda p: p.foster_home_id == home_id and p.status is PlacementStatus.ACTIVE,
            )
        )

    async def count_active_for_case(self, case_id: UUID) -> int:
        return len(
            (await self.session.tx()).select(
                PLACEMENTS, lambda p: p.case_id == case_id and p.status is PlacementStatus.ACTIVE
            )
        )

    async def _history(self, keep: Callable[[Placement], bool], keyset: Keyset) -> KeysetPage[Placement]:
        rows: list[Placement] = sorted(
            (await self.session.tx()).select(
                PLACEMENTS, lambda p: keep(p) and after(history_key(p), keyset, (True, True))
            ),
            key=history_key,
            reverse=True,
        )
        return keyset_page(rows[: keyset.limit + 1], keyset, history_key)

    async def list_for_case(self, case_id: UUID, keyset: Keyset) -> KeysetPage[Placement]:
        return await self._history(lambda p: p.case_id == case_id, keyset)

    async def list_for_home(
        self, home_id: UUID, status: PlacementStatus | None, keyset: Keyset, visible_to: Principal | None = None
    ) -> KeysetPage[Placement]:
        tx = await self.session.tx()

        def visible(p: Placement) -> bool:
            if visible_to is None:
                return True
            case = tx.get(CASES, p.case_id)
            return case is not None and can_see(case, visible_to)

        return await self._history(
            lambda p: p.foster_home_id == home_id and (status is None or p.status is status) and visible(p), keyset
        )
