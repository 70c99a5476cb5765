"""Foster-home changes and a home's placement history under ``/v1/foster-homes/{id}``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

import msgspec
from litestar import Request, Response, get, patch
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, HeaderParameter, JSONBody

from craig.domain.constants import FOSTER_HOME_MAX_CAPACITY, FOSTER_HOME_NAME_MAX_LENGTH
from craig.domain.foster_home_changes import FosterHomeChange
from craig.domain.placements import parse_status
from craig.entrypoints.http.api_contract import SUPERVISORS, answers
from craig.entrypoints.http.dependencies import Me, Paging
from craig.entrypoints.http.etags import require_if_match
from craig.entrypoints.http.pagination import keyset_of, next_page
from craig.entrypoints.http.routes.case_lifecycle import PlacementHistoryPage, placement_summary
from craig.entrypoints.http.routes.cases import PAGING_PROBLEMS
from craig.entrypoints.http.routes.placements import FosterHomeView, home_headers, home_view
from craig.entrypoints.http.schema_meta import documented
from craig.usecases.foster_homes.list_home_placements import ListHomePlacements
from craig.usecases.foster_homes.update_foster_home import UpdateFosterHome

TAGS = ["placements"]
HOME = "/foster-homes/{home_id:uuid}"


class FosterHomeChangeBody(msgspec.Struct, forbid_unknown_fields=True):
    """Absent or null leaves a field as it is. ``status``: open or closed."""

    name: Annotated[str, documented(min_length=1, max_length=FOSTER_HOME_NAME_MAX_LENGTH)] | None = None
    capacity: Annotated[int, documented(minimum=1, maximum=FOSTER_HOME_MAX_CAPACITY)] | None = None
    status: str | None = None


@patch(
    HOME,
    tags=TAGS,
    summary="Change a foster home's name, capacity or status (supervisors, admins)",
    opt=answers(
        "invalid-input",
        "invalid-precondition",
        "capacity-below-occupancy",
        "foster-home-has-active-placements",
        roles=SUPERVISORS,
        if_match_required=True,
        headers=("ETag",),
    ),
)
async def update_foster_home(
    home_id: FromPath[UUID],
    data: JSONBody[FosterHomeChangeBody],
    principal: Me,
    update_foster_home: NamedDependency[UpdateFosterHome],
    if_match: Annotated[str | None, HeaderParameter(name="If-Match", description="The home's ETag (required)")] = None,
) -> Response[FosterHomeView]:
    """409 `capacity-below-occupancy` for a capacity below the active placements, 409
    `foster-home-has-active-placements` to close a home that has some; nothing changes then. A
    closed home takes no new placement (409 `foster-home-closed`). 428 without `If-Match`, 412
    when stale (the ETag changes with the occupancy too)."""
    change = FosterHomeChange.parse(name=data.name, capacity=data.capacity, status=data.status)
    home = await update_foster_home(principal, home_id, change, require_if_match(if_match))
    return Response(home_view(home), headers=home_headers(home))


@get(
    f"{HOME}/placements",
    tags=TAGS,
    summary="A foster home's placement history, newest first",
    opt=answers(*PAGING_PROBLEMS, "invalid-input", optional_headers=("Link",)),
)
async def list_home_placements(
    request: Request[Any, Any, Any],
    home_id: FromPath[UUID],
    principal: Me,
    cursors: Paging,
    list_home_placements: NamedDependency[ListHomePlacements],
    status: FromQuery[str | None] = None,
    limit: FromQuery[int | None] = None,
    cursor: FromQuery[str | None] = None,
) -> Response[PlacementHistoryPage]:
    """`status`: planned, active, ended or cancelled. Case workers see only the placements of
    cases they may see (a page may then hold fewer than `limit` items)."""
    wanted = parse_status(status) if status is not None else None
    keyset = keyset_of(request, cursors, limit, cursor, (datetime, UUID))
    found = await list_home_placements(principal, home_id, wanted, keyset)
    next_cursor, headers = next_page(request, cursors, found.next_after)
    return Response(PlacementHistoryPage([placement_summary(p) for p in found.items], next_cursor), headers=headers)


ROUTES = [update_foster_home, list_home_placements]
