"""``/v1/foster-homes`` and ``/v1/placements``: translate HTTP to the placement use cases."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any
from uuid import UUID

import msgspec
from litestar import Request, Response, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, HeaderParameter, JSONBody

from craig.domain.constants import FOSTER_HOME_MAX_CAPACITY, FOSTER_HOME_NAME_MAX_LENGTH
from craig.domain.placement_changes import NewPlacement, PlacementPatch
from craig.domain.placements import INITIAL_STATUSES, EndReason, FosterHome, Placement, PlacementStatus
from craig.entrypoints.http.api_contract import SUPERVISORS, answers
from craig.entrypoints.http.dependencies import Me, Paging
from craig.entrypoints.http.etags import parse_if_match
from craig.entrypoints.http.pagination import keyset_of, legacy_page, next_page
from craig.entrypoints.http.routes.cases import PAGING_PROBLEMS
from craig.entrypoints.http.schema_meta import documented
from craig.entrypoints.http.validators import etag
from craig.usecases.foster_homes.list_foster_home_page import ListFosterHomePage
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
    capacity: Annotated[int, documented(minimum=1, maximum=FOSTER_HOME_MAX_CAPACITY, examples=[2])]


class FosterHomeView(msgspec.Struct):
    id: UUID
    name: str
    capacity: int
    occupancy: int
    created_at: datetime
    status: str
    version: int


class FosterHomePage(msgspec.Struct):
    items: list[FosterHomeView]
    page: int
    per_page: int
    total: int


class FosterHomeKeysetPage(msgspec.Struct):
    items: list[FosterHomeView]
    next_cursor: str | None


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
    version: int


def _home(home: FosterHome) -> FosterHomeView:
    return FosterHomeView(
        id=home.id,
        name=home.name,
        capacity=home.capacity,
        occupancy=home.occupancy,
        created_at=home.created_at,
        status=home.status.value,
        version=home.version,
    )


def home_view(home: FosterHome) -> FosterHomeView:
    return _home(home)


def home_headers(home: FosterHome) -> dict[str, str]:
    return {"ETag": etag(home.version)}


def placement_headers(placement: Placement) -> dict[str, str]:
    return {"ETag": etag(placement.version)}


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
        version=placement.version,
    )


@post(
    "/foster-homes",
    status_code=201,
    tags=TAGS,
    summary="Register a foster home (supervisor, admin)",
    opt=answers("invalid-input", roles=SUPERVISORS, headers=("Location", "ETag")),
)
async def create_foster_home(
    data: JSONBody[NewFosterHomeBody], principal: Me, create_foster_home: NamedDependency[CreateFosterHome]
) -> Response[FosterHomeView]:
    home = await create_foster_home(principal, name=data.name, capacity=data.capacity)
    headers = {"Location": f"/v1/foster-homes/{home.id}", **home_headers(home)}
    return Response(_home(home), status_code=201, headers=headers)


@get(
    "/foster-homes",
    tags=TAGS,
    summary="Foster homes by name, paginated",
    opt=answers(*PAGING_PROBLEMS, "invalid-input", optional_headers=("Link",)),
)
async def list_foster_homes(
    request: Request[Any, Any, Any],
    principal: Me,
    cursors: Paging,
    list_foster_homes: NamedDependency[ListFosterHomes],
    list_foster_home_page: NamedDependency[ListFosterHomePage],
    limit: FromQuery[int | None] = None,
    cursor: FromQuery[str | None] = None,
    page: FromQuery[int | None] = None,
    per_page: FromQuery[int | None] = None,
) -> Response[FosterHomePage | FosterHomeKeysetPage]:
    """Keyset pages (`limit`, `cursor`); `page`/`per_page` still answer the old offset page."""
    legacy = legacy_page(page, per_page, limit=limit, cursor=cursor)
    if legacy is not None:
        result = await list_foster_homes(principal, legacy)
        items = [_home(home) for home in result.items]
        return Response(FosterHomePage(items=items, page=result.page, per_page=result.per_page, total=result.total))
    found = await list_foster_home_page(principal, keyset_of(request, cursors, limit, cursor, (str, UUID)))
    next_cursor, headers = next_page(request, cursors, found.next_after)
    return Response(FosterHomeKeysetPage([_home(home) for home in found.items], next_cursor), headers=headers)


@get("/foster-homes/{home_id:uuid}", tags=TAGS, summary="One foster home", opt=answers(headers=("ETag",)))
async def get_foster_home(
    home_id: FromPath[UUID], principal: Me, get_foster_home: NamedDependency[GetFosterHome]
) -> Response[FosterHomeView]:
    """Sends `ETag` (the `If-Match` of `PATCH`); it changes with the occupancy too."""
    home = await get_foster_home(principal, home_id)
    return Response(_home(home), headers=home_headers(home))


@post(
    "/placements",
    status_code=201,
    tags=TAGS,
    summary="Place a child of a case, planned or active",
    opt=answers("not-found", "case-closed", "foster-home-closed", *PLACEMENT_PROBLEMS, headers=("Location", "ETag")),
)
async def create_placement(
    data: JSONBody[NewPlacementBody], principal: Me, create_placement: NamedDependency[CreatePlacement]
) -> Response[PlacementView]:
    command = NewPlacement.parse(
        case_id=data.case_id, foster_home_id=data.foster_home_id, status=data.status, start_date=data.start_date
    )
    placement = await create_placement(principal, command)
    headers = {"Location": f"/v1/placements/{placement.id}", **placement_headers(placement)}
    return Response(_placement(placement), status_code=201, headers=headers)


@get("/placements/{placement_id:uuid}", tags=TAGS, summary="One placement", opt=answers(headers=("ETag",)))
async def get_placement(
    placement_id: FromPath[UUID], principal: Me, get_placement: NamedDependency[GetPlacement]
) -> Response[PlacementView]:
    """Sends `ETag`: send it back as `If-Match` on `PATCH` to detect a lost update."""
    placement = await get_placement(principal, placement_id)
    return Response(_placement(placement), headers=placement_headers(placement))


@patch(
    "/placements/{placement_id:uuid}",
    tags=TAGS,
    summary="Activate, end (with end_reason), cancel or move a placement",
    opt=answers(
        "case-closed",
        "foster-home-closed",
        "invalid-precondition",
        *PLACEMENT_PROBLEMS,
        if_match=True,
        headers=("ETag",),
    ),
)
async def update_placement(
    placement_id: FromPath[UUID],
    data: JSONBody[PlacementPatchBody],
    principal: Me,
    update_placement: NamedDependency[UpdatePlacement],
    if_match: Annotated[str | None, HeaderParameter(name="If-Match", description="Optional: the ETag you read")] = None,
) -> Response[PlacementView]:
    """With `If-Match`, 412 `precondition-failed` when the placement changed since it was read;
    without it, the change applies to whatever is current. Activating or moving needs the case
    open (409 `case-closed`) and the home open (409 `foster-home-closed`)."""
    change = PlacementPatch.parse(status=data.status, end_reason=data.end_reason, foster_home_id=data.foster_home_id)
    placement = await update_placement(principal, placement_id, change, parse_if_match(if_match))
    return Response(_placement(placement), headers=placement_headers(placement))


ROUTES = [
    create_foster_home,
    list_foster_homes,
    get_foster_home,
    create_placement,
    get_placement,
    update_placement,
]
