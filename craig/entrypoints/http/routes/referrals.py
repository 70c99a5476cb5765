"""The intake queue under ``/v1/referrals``: list, read and screen referrals.

For supervisors, admins and screeners; a case worker gets 403 on every route here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

import msgspec
from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, FromQuery, HeaderParameter, JSONBody

from craig.domain.access import Role
from craig.domain.errors import InvalidInput
from craig.domain.screening import QueueEntry, ReferralStatus, parse_priority
from craig.entrypoints.http.api_contract import answers
from craig.entrypoints.http.dependencies import Me, Paging
from craig.entrypoints.http.etags import require_if_match
from craig.entrypoints.http.pagination import keyset_of, next_page
from craig.entrypoints.http.routes.cases import PAGING_PROBLEMS
from craig.entrypoints.http.validators import etag
from craig.usecases.referrals.get_referral import GetReferral
from craig.usecases.referrals.list_referrals import ListReferrals
from craig.usecases.referrals.screen_referral import ScreenIn, ScreenOut, ScreenReferral

TAGS = ["referrals"]
#: Who works the intake queue.
SCREENERS = (Role.SCREENER, Role.SUPERVISOR, Role.ADMIN)
REFERRAL = "/referrals/{referral_id:uuid}"


class ChildView(msgspec.Struct):
    first_name: str
    age: int | None


class ReporterView(msgspec.Struct):
    name: str
    phone: str | None
    email: str | None


class ReferralView(msgspec.Struct, omit_defaults=True):
    """``screened_at``, ``screened_by``, ``decision_reason`` and ``case_id`` appear once screened."""

    id: UUID
    reference: str
    status: str
    priority: str | None
    received_at: datetime
    respond_by: datetime
    overdue: bool
    child: ChildView
    concern: str
    location: str | None
    reporter: ReporterView
    triage_version: int | None
    matched_rule: int | None
    version: int
    screened_at: datetime | None = None
    screened_by: UUID | None = None
    decision_reason: str | None = None
    case_id: UUID | None = None


class ReferralPage(msgspec.Struct):
    items: list[ReferralView]
    next_cursor: str | None


class NewCaseBody(msgspec.Struct, forbid_unknown_fields=True):
    title: str
    family_name: str | None = None


class ScreeningBody(msgspec.Struct, forbid_unknown_fields=True):
    """``screen_in`` needs ``case`` (``assign_to`` optional); ``screen_out`` needs ``reason``."""

    decision: str
    case: NewCaseBody | None = None
    assign_to: UUID | None = None
    reason: str | None = None


def referral_view(entry: QueueEntry) -> ReferralView:
    r = entry.referral
    screened = r.status != ReferralStatus.NEW
    return ReferralView(
        id=r.id,
        reference=r.reference,
        status=str(r.status),
        priority=r.priority,
        received_at=r.received_at,
        respond_by=entry.respond_by,
        overdue=entry.overdue,
        child=ChildView(r.child.first_name, r.child.age),
        concern=r.concern,
        location=r.location,
        reporter=ReporterView(r.reporter.name, r.reporter.phone, r.reporter.email),
        triage_version=r.triage_version,
        matched_rule=r.matched_rule,
        version=r.version,
        screened_at=r.screened_at if screened else None,
        screened_by=r.screened_by if screened else None,
        decision_reason=r.decision_reason if screened else None,
        case_id=r.case_id if screened else None,
    )


def _status(status: str | None) -> ReferralStatus:
    try:
        return ReferralStatus(status or "new")
    except ValueError:
        raise InvalidInput(f"status must be new, screened_in or screened_out; got {status!r}") from None


@get(
    "/referrals",
    tags=TAGS,
    summary="The intake queue, most urgent first",
    opt=answers(*PAGING_PROBLEMS, "invalid-input", roles=SCREENERS, optional_headers=("Link",)),
)
async def list_referrals(
    request: Request[Any, Any, Any],
    principal: Me,
    cursors: Paging,
    list_referrals: NamedDependency[ListReferrals],
    status: FromQuery[str | None] = None,
    priority: FromQuery[str | None] = None,
    overdue: FromQuery[bool | None] = None,
    limit: FromQuery[int | None] = None,
    cursor: FromQuery[str | None] = None,
) -> Response[ReferralPage]:
    """`status`: new (default), screened_in or screened_out. `priority`: urgent, high, medium,
    low or unscored. Ordered by priority (urgent first, unscored last), then oldest first.
    `respond_by` is the receipt plus the priority's response time (urgent 24 h, high 72 h,
    medium 5 days, low and unscored 10 days by default); `overdue` while new past it."""
    keyset = keyset_of(request, cursors, limit, cursor, (int, datetime, UUID))
    rank = parse_priority(priority) if priority is not None else None
    found = await list_referrals(principal, keyset, status=_status(status), priority_rank=rank, overdue=overdue)
    next_cursor, headers = next_page(request, cursors, found.next_after)
    return Response(ReferralPage([referral_view(e) for e in found.items], next_cursor), headers=headers)


@get(REFERRAL, tags=TAGS, summary="One referral", opt=answers(roles=SCREENERS, headers=("ETag",)))
async def get_referral(
    referral_id: FromPath[UUID], principal: Me, get_referral: NamedDependency[GetReferral]
) -> Response[ReferralView]:
    """Sends `ETag`: the `If-Match` of its screening."""
    entry = await get_referral(principal, referral_id)
    return Response(referral_view(entry), headers={"ETag": etag(entry.referral.version)})


@post(
    f"{REFERRAL}/screening",
    status_code=200,
    tags=TAGS,
    summary="Screen a referral in or out (If-Match required)",
    responses={201: ResponseSpec(ReferralView, description="Screened in: a case was opened (its Location)")},
    opt=answers(
        "invalid-input",
        "invalid-precondition",
        "referral-already-screened",
        roles=SCREENERS,
        if_match_required=True,
        headers=("ETag",),
        optional_headers=("Location",),
    ),
)
async def screen_referral(
    referral_id: FromPath[UUID],
    data: JSONBody[ScreeningBody],
    principal: Me,
    screen_referral: NamedDependency[ScreenReferral],
    if_match: Annotated[str | None, HeaderParameter(name="If-Match", description="The referral's ETag")] = None,
) -> Response[ReferralView]:
    """`{"decision": "screen_in", "case": {"title", "family_name"}, "assign_to"}` opens a case
    linked to the referral and answers 201 with `Location` of the case; `{"decision":
    "screen_out", "reason"}` (1-2000 characters) answers 200. 409 `referral-already-screened`
    (naming who and when) when it was screened before; 428 without `If-Match`, 412 when stale."""
    decision: ScreenIn | ScreenOut
    if data.decision == "screen_in":
        if data.case is None:
            raise InvalidInput("screen_in needs case: {title, family_name}")
        decision = ScreenIn(
            title=data.case.title, family_name=data.case.family_name, assign_to=data.assign_to, reason=data.reason
        )
    elif data.decision == "screen_out":
        if data.case is not None or data.assign_to is not None:
            raise InvalidInput("screen_out takes only reason; case and assign_to belong to screen_in")
        decision = ScreenOut(reason=data.reason or "")
    else:
        raise InvalidInput(f"decision must be screen_in or screen_out; got {data.decision!r}")
    done = await screen_referral(principal, referral_id, decision, require_if_match(if_match))
    headers = {"ETag": etag(done.entry.referral.version)}
    if done.case is None:
        return Response(referral_view(done.entry), headers=headers)
    headers["Location"] = f"/v1/cases/{done.case.id}"
    return Response(referral_view(done.entry), status_code=201, headers=headers)


ROUTES = [list_referrals, get_referral, screen_referral]
