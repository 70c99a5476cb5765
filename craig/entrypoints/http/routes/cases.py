"""Cases and contacts under ``/v1``: translate HTTP to the use cases and back."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, FromQuery, HeaderParameter, JSONBody

from craig.domain.access import Principal
from craig.domain.case_search import CaseQuery
from craig.entrypoints.http.api_contract import SUPERVISORS, answers
from craig.entrypoints.http.dependencies import Me, Paging
from craig.entrypoints.http.etags import none_match
from craig.entrypoints.http.pagination import keyset_of, legacy_page, next_page
from craig.entrypoints.http.problems import ProblemException
from craig.entrypoints.http.routes.case_views import (
    AwareDatetime,
    CasePage,
    CaseView,
    ContactKeysetPage,
    ContactPage,
    ContactView,
    LegacyCasePage,
    NewAssignment,
    NewCase,
    NewContact,
    case_headers,
    case_view,
    contact_view,
)
from craig.usecases.case_lifecycle.search_cases import SearchCases
from craig.usecases.cases import AssignWorker, GetCase, GetContact, ListCases, ListContacts, OpenCase, RecordContact
from craig.usecases.listings.list_contact_page import ListContactPage

CASES = "/cases"
CASE = "/cases/{case_id:uuid}"
CONTACTS = f"{CASE}/contacts"
CONTACT = f"{CONTACTS}/{{contact_id:uuid}}"
#: The problems every keyset list may answer for its paging parameters.
PAGING_PROBLEMS = ("invalid-parameter", "invalid-cursor", "unknown-parameter")


@post(
    CASES,
    status_code=201,
    tags=["cases"],
    summary="Open a case",
    opt=answers("invalid-input", headers=("Location", "ETag")),
)
async def open_case(data: JSONBody[NewCase], principal: Me, open_case: NamedDependency[OpenCase]) -> Response[CaseView]:
    """The caller owns the case. Answers 201 with a `Location` header and the case's `ETag`."""
    case = await open_case(principal, title=data.title, family_name=data.family_name, opened_at=data.opened_at)
    return Response(
        case_view(case), status_code=201, headers={"Location": f"/v1/cases/{case.id}", **case_headers(case)}
    )


@get(CASE, tags=["cases"], summary="One case", opt=answers(if_none_match=True, headers=("ETag",)))
async def get_case(
    case_id: FromPath[UUID],
    principal: Me,
    get_case: NamedDependency[GetCase],
    if_none_match: Annotated[str | None, HeaderParameter(name="If-None-Match")] = None,
) -> Response[CaseView]:
    """404 when the case does not exist or belongs to another case worker. Sends `ETag`; an
    `If-None-Match` naming it answers 304 without a body."""
    case = await get_case(principal, case_id)
    if none_match(if_none_match, case.version):
        return Response(content=None, status_code=304, headers=case_headers(case))  # type: ignore[arg-type]
    return Response(case_view(case), headers=case_headers(case))


@get(
    CASES,
    tags=["cases"],
    summary="Find the cases you may see",
    opt=answers(*PAGING_PROBLEMS, "invalid-input", optional_headers=("Link",)),
)
async def list_cases(
    request: Request[Any, Any, Any],
    principal: Me,
    list_cases: NamedDependency[ListCases],
    search_cases: NamedDependency[SearchCases],
    cursors: Paging,
    status: FromQuery[str | None] = None,
    assigned_to: FromQuery[str | None] = None,
    family_name: FromQuery[str | None] = None,
    opened_from: FromQuery[AwareDatetime | None] = None,
    opened_to: FromQuery[AwareDatetime | None] = None,
    referral_id: FromQuery[UUID | None] = None,
    sort: FromQuery[str | None] = None,
    limit: FromQuery[int | None] = None,
    cursor: FromQuery[str | None] = None,
    page: FromQuery[int | None] = None,
    per_page: FromQuery[int | None] = None,
) -> Response[CasePage | LegacyCasePage]:
    """Case workers see the cases they opened or are assigned to, screeners the ones assigned to
    them, supervisors and admins all; the filters (AND) apply to those. `status` is `open` or
    `closed`; `assigned_to` is `me` or a worker's id; `family_name` matches exactly after case
    folding and whitespace normalisation; `sort` is `opened_at`, `-opened_at` (default),
    `updated_at` or `-updated_at`. Keyset pages (`limit` 1-200, `cursor`); `page`/`per_page` still
    answer the old offset page, without filters."""
    filters = {
        "status": status,
        "assigned_to": assigned_to,
        "family_name": family_name,
        "opened_from": opened_from,
        "opened_to": opened_to,
        "referral_id": referral_id,
        "sort": sort,
        "limit": limit,
        "cursor": cursor,
    }
    legacy = legacy_page(page, per_page, **filters)
    if legacy is not None:
        found = await list_cases(principal, legacy)
        return Response(LegacyCasePage([case_view(c) for c in found.items], found.page, found.per_page, found.total))
    query = CaseQuery.parse(
        status=status,
        assigned_to=_assignee(assigned_to, principal),
        family_name=family_name,
        opened_from=opened_from,
        opened_to=opened_to,
        referral_id=referral_id,
        sort=sort,
    )
    kinds = (datetime, UUID)
    result = await search_cases(principal, query, keyset_of(request, cursors, limit, cursor, kinds))
    next_cursor, headers = next_page(request, cursors, result.next_after)
    return Response(CasePage([case_view(c) for c in result.items], next_cursor), headers=headers)


def _assignee(value: str | None, principal: Principal) -> UUID | None:
    if value is None:
        return None
    if value == "me":
        return principal.sub
    try:
        return UUID(value)
    except ValueError:
        raise ProblemException(
            400,
            "invalid-parameter",
            "assigned_to must be `me` or a worker's id (a UUID)",
            extra={"parameter": "assigned_to"},
        ) from None


@post(
    f"{CASE}/assignments",
    tags=["cases"],
    summary="Assign a case worker (supervisors, admins)",
    responses={200: ResponseSpec(CaseView, description="The worker was assigned already")},
    status_code=201,
    opt=answers("case-closed", roles=SUPERVISORS, headers=("ETag",)),
)
async def assign_worker(
    case_id: FromPath[UUID], data: JSONBody[NewAssignment], principal: Me, assign_worker: NamedDependency[AssignWorker]
) -> Response[CaseView]:
    """201 with the case when the worker is newly assigned, 200 when already assigned; 403 for
    case workers; 409 `case-closed` for a closed case."""
    case, assigned = await assign_worker(principal, case_id, data.worker_sub)
    return Response(case_view(case), status_code=201 if assigned else 200, headers=case_headers(case))


@post(
    CONTACTS,
    status_code=201,
    tags=["contacts"],
    summary="Record a contact",
    opt=answers("invalid-input", "case-closed", headers=("Location",)),
)
async def record_contact(
    case_id: FromPath[UUID], data: JSONBody[NewContact], principal: Me, record_contact: NamedDependency[RecordContact]
) -> Response[ContactView]:
    """`contact_type`: home_visit, office_visit, school_visit, phone_call, video_call, collateral,
    correspondence or other. The summary is stored encrypted. 409 `case-closed` for a closed case."""
    contact = await record_contact(
        principal,
        case_id,
        contact_type=data.contact_type,
        occurred_at=data.occurred_at,
        summary=data.summary,
    )
    location = f"/v1/cases/{case_id}/contacts/{contact.id}"
    return Response(contact_view(contact), status_code=201, headers={"Location": location})


@get(
    CONTACTS,
    tags=["contacts"],
    summary="A case's contacts, most recent first",
    opt=answers(*PAGING_PROBLEMS, "invalid-input", optional_headers=("Link",)),
)
async def list_contacts(
    request: Request[Any, Any, Any],
    case_id: FromPath[UUID],
    principal: Me,
    cursors: Paging,
    list_contacts: NamedDependency[ListContacts],
    list_contact_page: NamedDependency[ListContactPage],
    limit: FromQuery[int | None] = None,
    cursor: FromQuery[str | None] = None,
    page: FromQuery[int | None] = None,
    per_page: FromQuery[int | None] = None,
) -> Response[ContactKeysetPage | ContactPage]:
    """Keyset pages (`limit`, `cursor`: `{items, next_cursor}`); `page`/`per_page` still answer
    the old `{items, page, per_page, total}`."""
    legacy = legacy_page(page, per_page, limit=limit, cursor=cursor)
    if legacy is not None:
        found = await list_contacts(principal, case_id, legacy)
        return Response(ContactPage([contact_view(c) for c in found.items], found.page, found.per_page, found.total))
    keyset = keyset_of(request, cursors, limit, cursor, (datetime, UUID))
    result = await list_contact_page(principal, case_id, keyset)
    next_cursor, headers = next_page(request, cursors, result.next_after)
    return Response(ContactKeysetPage([contact_view(c) for c in result.items], next_cursor), headers=headers)


@get(CONTACT, tags=["contacts"], summary="One contact")
async def get_contact(
    case_id: FromPath[UUID], contact_id: FromPath[UUID], principal: Me, get_contact: NamedDependency[GetContact]
) -> ContactView:
    """404 when the case or the contact is not visible to you."""
    return contact_view(await get_contact(principal, case_id, contact_id))


ROUTES = [open_case, get_case, list_cases, assign_worker, record_contact, list_contacts, get_contact]
