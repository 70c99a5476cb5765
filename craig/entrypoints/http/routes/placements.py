"""``/v1/foster-homes`` and ``/v1/placements``: translate HTTP to the placement use cases."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated
from uuid import UUID

import msgspec
from litestar import Response, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody

from craig.domain.constants import DEFAULT_PAGE_SIZE, FOSTER_HOME_NAME_MAX_LENGTH
from craig.domain.pages import PageRequest
from craig.domain.placement_changes import NewPlacement, PlacementPatch
from craig.domain.placements import INITIAL_STATUSES, EndReason, FosterHome, Placement, PlacementStatus
from craig.entrypoints.http.api_contract import SUPERVISORS, answers
from craig.entrypoints.http.dependencies import Me
from craig.entrypoints.http.schema_meta import documented
from craig.usecases.placements import (
    CreateFosterHome,
    CreatePlacement,
    GetFosterHome,
    GetPlacement,
    ListFosterHomes,
    UpdatePlacement,
)

TAGS = ["placements"]
#: What creating or changing a placement may answer besides the problems every write may.
PLACEMENT_PROBLEMS = (
    "invalid-input",
    "case-already-placed",
    "placement-closed",
    "placement-needs-foster-home",
    "invalid-placement-transition",
    "foster-home-at-capacity",
    "occupancy-underflow",
)


class NewFosterHomeBody(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, documented(min_length=1, max_length=FOSTER_HOME_NAME_MAX_LENGTH, examples=["The Millers"])]
    capacity: Annotated[int, documented(minimum=1, examples=[2])]


class FosterHomeView(msgspec.Struct):
    id: UUID
    name: str
    capacity: int
    occupancy: int
    created_at: datetime


class FosterHomePage(msgspec.Struct):
    items: list[FosterHomeView]
    page: int
    per_page: int
    total: int


class NewPlacementBody(msgspec.Struct, forbid_unknown_fields=True):
    case_id: UUID
    status: Annotated[str, documented(enum=[s.value for s in INITIAL_STATUSES], examples=["planned"])]
    start_date: date
    foster_home_id: UUID | None = None


class PlacementPatchBody(msgspec.Struct, forbid_unknown_fields=True):
    """Absent and ``null`` mean the same: leave as is."""

    status: Annotated[str, documented(enum=[s.value for s in PlacementStatus])] | None = None
    end_reason: Annotated[str, documented(enum=[r.value for r in EndReason])] | None = None
    foster_home_id: UUID | None = None


class PlacementView(msgspec.Struct):
    id: UUID
    case_id: UUID
    foster_home_id: UUID | None
    status: PlacementStatus
    start_date: date
    end_reason: EndReason | None
    ended_at: datetime | None
    created_at: datetime
    updated_at: datetime


def _home(home: FosterHome) -> FosterHomeView:
    return FosterHomeView(
        id=home.id, name=home.name, capacity=home.capacity, occupancy=home.occupancy, created_at=home.created_at
    )


def _placement(placement: Placement) -> PlacementView:
    return PlacementView(
        id=placement.id,
        case_id=placement.case_id,
        foster_home_id=placement.foster_home_id,
        status=placement.status,
        start_date=placement.start_date,
        end_reason=placement.end_reason,
        ended_at=placement.ended_at,
        created_at=placement.created_at,
        updated_at=placement.updated_at,
    )


@post(
    "/foster-homes",
    status_code=201,
    tags=TAGS,
    summary="Register a foster home (supervisor, admin)",
    opt=answers("invalid-input", roles=SUPERVISORS, headers=("Location",)),
)
async def create_foster_home(
    data: JSONBody[NewFosterHomeBody], principal: Me, create_foster_home: NamedDependency[CreateFosterHome]
) -> Response[FosterHomeView]:
    home = await create_foster_home(principal, name=data.name, capacity=data.capacity)
    return Response(_home(home), status_code=201, headers={"Location": f"/v1/foster-homes/{home.id}"})


@get("/foster-homes", tags=TAGS, summary="Foster homes by name, paginated")
async def list_foster_homes(
    list_foster_homes: NamedDependency[ListFosterHomes],
    page: FromQuery[int] = 1,
    per_page: FromQuery[int] = DEFAULT_PAGE_SIZE,
) -> FosterHomePage:
    result = await list_foster_homes(PageRequest(page=page, per_page=per_page))
    return FosterHomePage(
        items=[_home(home) for home in result.items],
        page=result.page,
        per_page=result.per_page,
        total=result.total,
    )


@get("/foster-homes/{home_id:uuid}", tags=TAGS, summary="One foster home")
async def get_foster_home(home_id: FromPath[UUID], get_foster_home: NamedDependency[GetFosterHome]) -> FosterHomeView:
    return _home(await get_foster_home(home_id))


@post(
    "/placements",
    status_code=201,
    tags=TAGS,
    summary="Place a child of a case, planned or active",
    opt=answers("not-found", *PLACEMENT_PROBLEMS, headers=("Location",)),
)
async def create_placement(
    data: JSONBody[NewPlacementBody], principal: Me, create_placement: NamedDependency[CreatePlacement]
) -> Response[PlacementView]:
    command = NewPlacement.parse(
        case_id=data.case_id, foster_home_id=data.foster_home_id, status=data.status, start_date=data.start_date
    )
    placement = await create_placement(principal, command)
    return Response(_placement(placement), status_code=201, headers={"Location": f"/v1/placements/{placement.id}"})


@get("/placements/{placement_id:uuid}", tags=TAGS, summary="One placement")
async def get_placement(
    placement_id: FromPath[UUID], principal: Me, get_placement: NamedDependency[GetPlacement]
) -> PlacementView:
    return _placement(await get_placement(principal, placement_id))


@patch(
    "/placements/{placement_id:uuid}",
    tags=TAGS,
    summary="Activate, end (with end_reason), cancel or move a placement",
    opt=answers(*PLACEMENT_PROBLEMS),
)
async def update_placement(
    placement_id: FromPath[UUID],
    data: JSONBody[PlacementPatchBody],
    principal: Me,
    update_placement: NamedDependency[UpdatePlacement],
) -> PlacementView:
    change = PlacementPatch.parse(status=data.status, end_reason=data.end_reason, foster_home_id=data.foster_home_id)
    placement = await update_placement(principal, placement_id, change)
    return _placement(placement)


ROUTES = [
    create_foster_home,
    list_foster_homes,
    get_foster_home,
    create_placement,
    get_placement,
    update_placement,
]
