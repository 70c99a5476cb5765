"""Foster-home and placement rows <-> domain objects, for the PostgreSQL repositories."""

from __future__ import annotations

from typing import Any

from craig.adapters.postgres.driver import Row
from craig.domain.placements import EndReason, FosterHome, FosterHomeStatus, Placement, PlacementStatus

HOME_COLUMNS = "id, name, capacity, occupancy, created_by, created_at, status, version"
PLACEMENT_COLUMNS = (
    "id, case_id, foster_home_id, status, start_date, end_reason, ended_at, created_by, created_at, updated_at, version"
)


def home_from_row(row: Row) -> FosterHome:
    return FosterHome(
        id=row["id"],
        name=row["name"],
        capacity=row["capacity"],
        occupancy=row["occupancy"],
        created_by=row["created_by"],
        created_at=row["created_at"],
        status=FosterHomeStatus(row["status"]),
        version=row["version"],
    )


def placement_from_row(row: Row) -> Placement:
    return Placement(
        id=row["id"],
        case_id=row["case_id"],
        foster_home_id=row["foster_home_id"],
        status=PlacementStatus(row["status"]),
        start_date=row["start_date"],
        end_reason=EndReason(row["end_reason"]) if row["end_reason"] else None,
        ended_at=row["ended_at"],
        created_by=row["created_by"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        version=row["version"],
    )


def placement_params(placement: Placement) -> dict[str, Any]:
    return {
        "id": placement.id,
        "case_id": placement.case_id,
        "foster_home_id": placement.foster_home_id,
        "status": placement.status.value,
        "start_date": placement.start_date,
        "end_reason": placement.end_reason.value if placement.end_reason else None,
        "ended_at": placement.ended_at,
        "created_by": placement.created_by,
        "created_at": placement.created_at,
        "updated_at": placement.updated_at,
        "version": placement.version,
    }
