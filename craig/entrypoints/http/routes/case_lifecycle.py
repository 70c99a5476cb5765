"""A case's lifecycle under ``/v1/cases/{id}``: change, close, reopen, unassign, placement history."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any
from uuid import UUID

import msgspec
from litestar import Request, Response, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, HeaderParameter, JSONBody

from craig.domain.case_lifecycle import CaseDetails
from craig.domain.placements import Placement
from craig.entrypoints.http.api_contract import SUPERVISORS, answers
from craig.entrypoints.http.dependencies import Me, Paging
from craig.entrypoints.http.etags import parse_if_match, require_if_match
from craig.entrypoints.http.pagination import keyset_of, next_page
from craig.entrypoints.http.routes.case_views import CaseView, case_headers, case_view
from craig.entrypoints.http.routes.cases import PAGING_PROBLEMS
from craig.entrypoints.http.validators import etag
from craig.usecases.case_lifecycle.close_case import CloseCase
from craig.usecases.case_lifecycle.list_case_placements import ListCasePlacements
from craig.usecases.case_lifecycle.reopen_case import ReopenCase
from craig.usecases.case_lifecycle.unassign_worker import UnassignWorker
from craig.usecases.case_lifecycle.update_case import UpdateCase

CASE = "/cases/{case_id:uuid}"
TAGS = ["cases"]
IfMatchHeader = Annotated[
    str | None, HeaderParameter(name="If-Match", description="The ETag you read (required: 428 without it)")
]
OptionalIfMatch = Annotated[str | None, HeaderParameter(name="If-Match", description="The ETag you read (optional)")]


class CaseChangeBody(msgspec.Struct, forbid_unknown_fields=True):
    """Absent leaves a field as it is; ``family_name: null`` removes the family name."""

    title: str | msgspec.UnsetType = msgspec.UNSET
    family_name: str | msgspec.UnsetType | None = msgspec.UNSET


class ReasonBody(msgspec.Struct, forbid_unknown_fields=True):
    reason: str


class PlacementSummary(msgspec.Struct):
    id: UUID
    case_id: UUID
    foster_home_id: UUID | None
    status: str
    start_date: date
    end_reason: str | None
    ended_at: datetime | None
    created_at: datetime
    updated_at: datetime
    version: int


class PlacementHistoryPage(msgspec.Struct):
    items: list[PlacementSummary]
    next_cursor: str | None


def placement_summary(placement: Placement) -> PlacementSummary:
    return PlacementSummary(
        id=placement.id,
        case_id=placement.case_id,
        foster_home_id=placement.foster_home_id,
        status=placement.status.value,
        start_date=placement.start_date,
        end_reason=placement.end_reason.value if placement.end_reason else None,
        ended_at=placement.ended_at,
        created_at=placement.created_at,
        updated_at=placement.updated_at,
        version=placement.version,
    )


def _details(body: CaseChangeBody) -> CaseDetails:
    title = None if isinstance(body.title, msgspec.UnsetType) else body.title
    family = body.family_name
    return CaseDetails(
        title=title,
        family_name=None if isinstance(family, msgspec.UnsetType) else family,
        clear_family_name=family is None,
    )


@patch(
    CASE,
    tags=TAGS,
    summary="Change a case's title or family name (If-Match required)",
    opt=answers("invalid-input", "invalid-precondition", if_match_required=True, headers=("ETag",)),
)
async def update_case(
    case_id: FromPath[UUID],
    data: JSONBody[CaseChangeBody],
    principal: Me,
    update_case: NamedDependency[UpdateCase],
    if_match: IfMatchHeader = None,
) -> Response[CaseView]:
    """428 `precondition-required` without `If-Match`; 412 `precondition-failed` (with the
    current `ETag`) when the case changed since it was read. `cases.case_updated` names the
    changed fields."""
    case = await update_case(principal, case_id, _details(data), require_if_match(if_match))
    return Response(case_view(case), headers=case_headers(case))


@post(
    f"{CASE}/closure",
    status_code=200,
    tags=TAGS,
    summary="Close a case (If-Match required)",
    opt=answers(
        "invalid-input",
        "invalid-precondition",
        "case-has-active-placement",
        "invalid-case-transition",
        if_match_required=True,
        headers=("ETag",),
    ),
)
async def close_case(
    case_id: FromPath[UUID],
    data: JSONBody[ReasonBody],
    principal: Me,
    close_case: NamedDependency[CloseCase],
    if_match: IfMatchHeader = None,
) -> Response[CaseView]:
    """409 `case-has-active-placement` while it has an active placement, 409
    `invalid-case-transition` when closed already; 428/412 as for PATCH. A closed case takes no
    new contact, attachment, placement or assignment (409 `case-closed`)."""
    case = await close_case(principal, case_id, data.reason, require_if_match(if_match))
    return Response(case_view(case), headers=case_headers(case))


@post(
    f"{CASE}/reopening",
    status_code=200,
    tags=TAGS,
    summary="Reopen a closed case (supervisors, admins)",
    opt=answers(
        "invalid-input",
        "invalid-precondition",
        "invalid-case-transition",
        roles=SUPERVISORS,
        if_match=True,
        headers=("ETag",),
    ),
)
async def reopen_case(
    case_id: FromPath[UUID],
    data: JSONBody[ReasonBody],
    principal: Me,
    reopen_case: NamedDependency[ReopenCase],
    if_match: OptionalIfMatch = None,
) -> Response[CaseView]:
    """403 for other roles; 409 `invalid-case-transition` for an open case; 412 for a stale
    `If-Match` when one is sent."""
    case = await reopen_case(principal, case_id, data.reason, parse_if_match(if_match))
    return Response(case_view(case), headers=case_headers(case))


@delete(
    f"{CASE}/assignments/{{worker_sub:uuid}}",
    status_code=204,
    tags=TAGS,
    summary="Unassign a worker (supervisors, admins)",
    opt=answers(roles=SUPERVISORS),
)
async def unassign_worker(
    case_id: FromPath[UUID], worker_sub: FromPath[UUID], principal: Me, unassign_worker: NamedDependency[UnassignWorker]
) -> None:
    """204 once unassigned; 404 when the case is unknown or the worker is not assigned; 403 for
    other roles. Honours `Idempotency-Key`: a retry replays the first answer."""
    await unassign_worker(principal, case_id, worker_sub)


@get(
    f"{CASE}/placements",
    tags=TAGS,
    summary="A case's placement history, newest first",
    opt=answers(*PAGING_PROBLEMS, optional_headers=("Link",)),
)
async def list_case_placements(
    request: Request[Any, Any, Any],
    case_id: FromPath[UUID],
    principal: Me,
    cursors: Paging,
    list_case_placements: NamedDependency[ListCasePlacements],
    limit: FromQuery[int | None] = None,
    cursor: FromQuery[str | None] = None,
) -> Response[PlacementHistoryPage]:
    keyset = keyset_of(request, cursors, limit, cursor, (datetime, UUID))
    found = await list_case_placements(principal, case_id, keyset)
    next_cursor, headers = next_page(request, cursors, found.next_after)
    return Response(PlacementHistoryPage([placement_summary(p) for p in found.items], next_cursor), headers=headers)


def placement_headers(placement: Placement) -> dict[str, str]:
    return {"ETag": etag(placement.version)}


ROUTES = [update_case, close_case, reopen_case, unassign_worker, list_case_placements]
