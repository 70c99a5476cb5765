"""PostgreSQL adapters of the foster-home and placement repositories: row locks
(``get_placement_for_update``, ``get_foster_home_for_update``) and occupancy in one statement.

Homes are locked ``FOR NO KEY UPDATE``, the mode an ``UPDATE`` of the home takes anyway: it
excludes every other writer of the home, yet unlike ``FOR UPDATE`` it does not conflict with the
``FOR KEY SHARE`` lock a foreign-key check takes, so inserting a planned placement (or any other
row that references a home) neither queues behind an activation nor can deadlock with one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any
from uuid import UUID

from sqlalchemy import text

from craig.adapters.postgres.cases import VISIBLE_CASE, visibility
from craig.adapters.postgres.placement_rows import (
    HOME_COLUMNS,
    PLACEMENT_COLUMNS,
    home_from_row,
    placement_from_row,
    placement_params,
)
from craig.adapters.postgres.session import PostgresSession
from craig.domain.access import Principal
from craig.domain.keyset import Keyset, KeysetPage, keyset_page
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
from craig.ports.placements import FosterHomeRepository, FosterHomeStats, PlacementRepository

_INSERT_HOME = text(
    """
    INSERT INTO foster_homes (id, name, capacity, occupancy, created_by, created_at, updated_at)
    VALUES (:id, :name, :capacity, :occupancy, :created_by, :created_at, :created_at)
    """
)
_GET_HOME = text(f"SELECT {HOME_COLUMNS} FROM foster_homes WHERE id = :id")
_LOCK_HOME = text(f"SELECT {HOME_COLUMNS} FROM foster_homes WHERE id = :id FOR NO KEY UPDATE")
_ADJUST_OCCUPANCY = text(
    f"""
    UPDATE foster_homes SET occupancy = occupancy + :delta, version = version + 1, updated_at = now()
     WHERE id = :id
    RETURNING {HOME_COLUMNS}
    """
)
_UPDATE_HOME = text(
    """
    UPDATE foster_homes SET name = :name, capacity = :capacity, status = :status, version = :version,
                            updated_at = now()
     WHERE id = :id
    """
)
_HOMES_PAGE = f"SELECT {HOME_COLUMNS} FROM foster_homes {{where}} ORDER BY name, id LIMIT :limit"
_LIST_HOMES = text(f"SELECT {HOME_COLUMNS} FROM foster_homes ORDER BY name, id LIMIT :limit OFFSET :offset")
_COUNT_HOMES = text("SELECT count(*) AS homes, count(*) FILTER (WHERE occupancy >= capacity) AS full FROM foster_homes")
_FULL_HOMES = text(
    f"SELECT {HOME_COLUMNS} FROM foster_homes WHERE occupancy >= capacity ORDER BY name, id LIMIT :limit"
)
_DRIFTED_HOMES = text(
    """
    SELECT h.id
      FROM foster_homes h
      LEFT JOIN (SELECT foster_home_id, count(*) AS active
                   FROM placements WHERE status = 'active' GROUP BY foster_home_id) a
        ON a.foster_home_id = h.id
     WHERE h.occupancy <> coalesce(a.active, 0)
     ORDER BY h.id
    """
)

_INSERT_PLACEMENT = text(
    f"INSERT INTO placements ({PLACEMENT_COLUMNS}) VALUES "
    "(:id, :case_id, :foster_home_id, :status, :start_date, :end_reason, :ended_at, "
    ":created_by, :created_at, :updated_at, :version)"
)
_GET_PLACEMENT = text(f"SELECT {PLACEMENT_COLUMNS} FROM placements WHERE id = :id")
_LOCK_PLACEMENT = text(f"SELECT {PLACEMENT_COLUMNS} FROM placements WHERE id = :id FOR UPDATE")
_UPDATE_PLACEMENT = text(
    """
    UPDATE placements
       SET status = :status, foster_home_id = :foster_home_id, end_reason = :end_reason,
           ended_at = :ended_at, updated_at = :updated_at, version = :version
     WHERE id = :id
    RETURNING id
    """
)
_COUNT_ACTIVE = text("SELECT count(*) FROM placements WHERE foster_home_id = :id AND status = 'active'")
_COUNT_ACTIVE_FOR_CASE = text("SELECT count(*) FROM placements WHERE case_id = :id AND status = 'active'")
_HISTORY = f"SELECT {PLACEMENT_COLUMNS} FROM placements WHERE {{where}} ORDER BY created_at DESC, id DESC LIMIT :limit"


class PostgresFosterHomeRepository(FosterHomeRepository):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    async def _one(self, statement: Any, params: Mapping[str, Any]) -> FosterHome | None:
        row = (await self.session.execute(statement, params)).mappings().first()
        return home_from_row(row) if row else None

    async def add(self, home: FosterHome) -> None:
        params = {
            "id": home.id,
            "name": home.name,
            "capacity": home.capacity,
            "occupancy": home.occupancy,
            "created_by": home.created_by,
            "created_at": home.created_at,
        }
        await self.session.execute(_INSERT_HOME, params)

    async def get(self, home_id: UUID) -> FosterHome | None:
        return await self._one(_GET_HOME, {"id": home_id})

    async def get_foster_home_for_update(self, home_id: UUID) -> FosterHome | None:
        return await self._one(_LOCK_HOME, {"id": home_id})

    async def get_foster_homes_for_update(self, home_ids: Collection[UUID]) -> Mapping[UUID, FosterHome]:
        locked = {}
        for home_id in sorted(set(home_ids)):  # Python and PostgreSQL order UUIDs alike
            home = await self.get_foster_home_for_update(home_id)
            if home is not None:
                locked[home_id] = home
        return locked

    async def update(self, home: FosterHome) -> None:
        params = {
            "id": home.id,
            "name": home.name,
            "capacity": home.capacity,
            "status": home.status.value,
            "version": home.version,
        }
        await self.session.execute(_UPDATE_HOME, params)

    async def list_page(self, keyset: Keyset) -> KeysetPage[FosterHome]:
        params: dict[str, Any] = {"limit": keyset.limit + 1}
        where = ""
        if keyset.after is not None:
            where = "WHERE (name, id) > (:after_name, :after_id)"
            params["after_name"], params["after_id"] = keyset.after
        rows = (await self.session.execute(text(_HOMES_PAGE.format(where=where)), params)).mappings().all()
        return keyset_page([home_from_row(row) for row in rows], keyset, home_key)

    async def adjust_occupancy(self, home_id: UUID, delta: int) -> FosterHome:
        home = await self._one(_ADJUST_OCCUPANCY, {"id": home_id, "delta": delta})
        if home is None:
            raise UnknownFosterHome(home_id)
        return home

    async def list_by_name(self, page: PageRequest) -> Page[FosterHome]:
        conn = await self.session.connection()
        total = (await conn.execute(_COUNT_HOMES)).mappings().one()["homes"]
        rows = await conn.execute(_LIST_HOMES, {"limit": page.per_page, "offset": page.offset})
        items = [home_from_row(row) for row in rows.mappings()]
        return Page(items=items, page=page.page, per_page=page.per_page, total=total)

    async def stats(self, sample: int) -> FosterHomeStats:
        conn = await self.session.connection()
        counts = (await conn.execute(_COUNT_HOMES)).mappings().one()
        full = [home_from_row(row) for row in (await conn.execute(_FULL_HOMES, {"limit": sample})).mappings()]
        drifted = [row[0] for row in await conn.execute(_DRIFTED_HOMES)]
        return FosterHomeStats(homes=counts["homes"], at_capacity=counts["full"], full_homes=full, drifted=drifted)


class PostgresPlacementRepository(PlacementRepository):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    async def _one(self, statement: Any, placement_id: UUID) -> Placement | None:
        row = (await self.session.execute(statement, {"id": placement_id})).mappings().first()
        return placement_from_row(row) if row else None

    async def add(self, placement: Placement) -> None:
        await self.session.execute(_INSERT_PLACEMENT, placement_params(placement))

    async def get(self, placement_id: UUID) -> Placement | None:
        return await self._one(_GET_PLACEMENT, placement_id)

    async def get_placement_for_update(self, placement_id: UUID) -> Placement | None:
        return await self._one(_LOCK_PLACEMENT, placement_id)

    async def update(self, placement: Placement) -> None:
        row = (await self.session.execute(_UPDATE_PLACEMENT, placement_params(placement))).first()
        if row is None:
            raise UnknownPlacement(placement.id)

    async def count_active_in(self, home_id: UUID) -> int:
        return int((await self.session.execute(_COUNT_ACTIVE, {"id": home_id})).scalar_one())

    async def count_active_for_case(self, case_id: UUID) -> int:
        return int((await self.session.execute(_COUNT_ACTIVE_FOR_CASE, {"id": case_id})).scalar_one())

    async def _history(self, where: list[str], params: dict[str, Any], keyset: Keyset) -> KeysetPage[Placement]:
        params = {**params, "limit": keyset.limit + 1}
        if keyset.after is not None:
            where = [*where, "(created_at, id) < (:after_created, :after_id)"]
            params["after_created"], params["after_id"] = keyset.after
        statement = text(_HISTORY.format(where=" AND ".join(where)))
        rows = (await self.session.execute(statement, params)).mappings().all()
        return keyset_page([placement_from_row(row) for row in rows], keyset, history_key)

    async def list_for_case(self, case_id: UUID, keyset: Keyset) -> KeysetPage[Placement]:
        return await self._history(["case_id = :owner"], {"owner": case_id}, keyset)

    async def list_for_home(
        self, home_id: UUID, status: PlacementStatus | None, keyset: Keyset, visible_to: Principal | None = None
    ) -> KeysetPage[Placement]:
        where = ["foster_home_id = :owner"]
        params: dict[str, Any] = {"owner": home_id}
        if status is not None:
            where.append("status = :status")
            params["status"] = status.value
        if visible_to is not None and not visible_to.sees_every_case:
            where.append(f"EXISTS (SELECT 1 FROM cases c WHERE c.id = placements.case_id AND {VISIBLE_CASE})")
            params.update(visibility(visible_to))
        return await self._history(where, params, keyset)
