"""Cases and contacts under ``/v1`` (issue 5): translate HTTP to the use cases and back."""

from __future__ import annotations

from uuid import UUID

from litestar import Response, get, post
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, FromQuery, JSONBody

from craig.domain.constants import DEFAULT_PAGE_SIZE
from craig.domain.pages import PageRequest
from craig.entrypoints.http.api_contract import SUPERVISORS, answers
from craig.entrypoints.http.dependencies import Me
from craig.entrypoints.http.routes.case_views import (
    CasePage,
    CaseView,
    ContactPage,
    ContactView,
    NewAssignment,
    NewCase,
    NewContact,
    case_view,
    contact_view,
)
from craig.usecases.cases import AssignWorker, GetCase, GetContact, ListCases, ListContacts, OpenCase, RecordContact

CASES = "/cases"
CASE = "/cases/{case_id:uuid}"
CONTACTS = f"{CASE}/contacts"
CONTACT = f"{CONTACTS}/{{contact_id:uuid}}"


@post(
    CASES,
    status_code=201,
    tags=["cases"],
    summary="Open a case",
    opt=answers("invalid-input", headers=("Location",)),
)
async def open_case(data: JSONBody[NewCase], principal: Me, open_case: NamedDependency[OpenCase]) -> Response[CaseView]:
    """The caller owns the case. Answers 201 with a `Location` header."""
    case = await open_case(principal, title=data.title, family_name=data.family_name, opened_at=data.opened_at)
    return Response(case_view(case), status_code=201, headers={"Location": f"/v1/cases/{case.id}"})


@get(CASE, tags=["cases"], summary="One case")
async def get_case(case_id: FromPath[UUID], principal: Me, get_case: NamedDependency[GetCase]) -> CaseView:
    """404 when the case does not exist or belongs to another case worker."""
    return case_view(await get_case(principal, case_id))


@get(CASES, tags=["cases"], summary="The cases you may see")
async def list_cases(
    principal: Me,
    list_cases: NamedDependency[ListCases],
    page: FromQuery[int] = 1,
    per_page: FromQuery[int] = DEFAULT_PAGE_SIZE,
) -> CasePage:
    """Case workers see the cases they opened or are assigned to; supervisors and admins all."""
    found = await list_cases(principal, PageRequest(page, per_page))
    return CasePage([case_view(case) for case in found.items], found.page, found.per_page, found.total)


@post(
    f"{CASE}/assignments",
    tags=["cases"],
    summary="Assign a case worker (supervisors, admins)",
    responses={200: ResponseSpec(CaseView, description="The worker was assigned already")},
    status_code=201,
    opt=answers(roles=SUPERVISORS),
)
async def assign_worker(
    case_id: FromPath[UUID], data: JSONBody[NewAssignment], principal: Me, assign_worker: NamedDependency[AssignWorker]
) -> Response[CaseView]:
    """201 with the case when the worker is newly assigned, 200 when already assigned; 403 for
    case workers."""
    case, assigned = await assign_worker(principal, case_id, data.worker_sub)
    return Response(case_view(case), status_code=201 if assigned else 200)


@post(
    CONTACTS,
    status_code=201,
    tags=["contacts"],
    summary="Record a contact",
    opt=answers("invalid-input", headers=("Location",)),
)
async def record_contact(
    case_id: FromPath[UUID], data: JSONBody[NewContact], principal: Me, record_contact: NamedDependency[RecordContact]
) -> Response[ContactView]:
    """`contact_type`: home_visit, office_visit, school_visit, phone_call, video_call, collateral,
    correspondence or other. The summary is stored encrypted."""
    contact = await record_contact(
        principal,
        case_id,
        contact_type=data.contact_type,
        occurred_at=data.occurred_at,
        summary=data.summary,
    )
    location = f"/v1/cases/{case_id}/contacts/{contact.id}"
    return Response(contact_view(contact), status_code=201, headers={"Location": location})


@get(CONTACTS, tags=["contacts"], summary="A case's contacts, most recent first")
async def list_contacts(
    case_id: FromPath[UUID],
    principal: Me,
    list_contacts: NamedDependency[ListContacts],
    page: FromQuery[int] = 1,
    per_page: FromQuery[int] = DEFAULT_PAGE_SIZE,
) -> ContactPage:
    """Most recent first."""
    found = await list_contacts(principal, case_id, PageRequest(page, per_page))
    return ContactPage([contact_view(c) for c in found.items], found.page, found.per_page, found.total)


@get(CONTACT, tags=["contacts"], summary="One contact")
async def get_contact(
    case_id: FromPath[UUID], contact_id: FromPath[UUID], principal: Me, get_contact: NamedDependency[GetContact]
) -> ContactView:
    """404 when the case or the contact is not visible to you."""
    return contact_view(await get_contact(principal, case_id, contact_id))


ROUTES = [open_case, get_case, list_cases, assign_worker, record_contact, list_contacts, get_contact]
