"""Cases and contacts under ``/v1`` (issue 5): translate HTTP to the use cases and back."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

import msgspec
from litestar import Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody

from craig.domain.cases import Case
from craig.domain.constants import DEFAULT_PAGE_SIZE
from craig.domain.contacts import Contact
from craig.domain.pages import Page, PageRequest
from craig.entrypoints.http.dependencies import Me
from craig.usecases.cases import AssignWorker, GetCase, GetContact, ListCases, ListContacts, OpenCase, RecordContact

AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]
CASES = "/cases"
CASE = "/cases/{case_id:uuid}"
CONTACTS = f"{CASE}/contacts"
CONTACT = f"{CONTACTS}/{{contact_id:uuid}}"


class NewCase(msgspec.Struct):
    title: str
    family_name: str | None = None
    opened_at: AwareDatetime | None = None


class NewAssignment(msgspec.Struct):
    worker_sub: UUID


class NewContact(msgspec.Struct):
    contact_type: str
    occurred_at: AwareDatetime
    summary: str


def case_json(case: Case) -> dict[str, Any]:
    return {
        "id": case.id,
        "title": case.title,
        "family_name": case.family_name,
        "opened_at": case.opened_at,
        "created_by": case.created_by,
        "created_at": case.created_at,
        "assigned_workers": sorted(str(worker) for worker in case.assigned_workers),
    }


def contact_json(contact: Contact) -> dict[str, Any]:
    return {
        "id": contact.id,
        "case_id": contact.case_id,
        "contact_type": str(contact.contact_type),
        "occurred_at": contact.occurred_at,
        "summary": contact.summary,
        "created_by": contact.created_by,
        "worker_name": contact.worker_name,
        "created_at": contact.created_at,
    }


def page_json(page: Page[Any], render: Any) -> dict[str, Any]:
    """Seed ``PageResponse``: ``{items, page, per_page, total}``."""
    return {
        "items": [render(item) for item in page.items],
        "page": page.page,
        "per_page": page.per_page,
        "total": page.total,
    }


@post(CASES, status_code=201, tags=["cases"], summary="Open a case")
async def open_case(
    data: JSONBody[NewCase], principal: Me, open_case: NamedDependency[OpenCase]
) -> Response[dict[str, Any]]:
    """The caller owns the case. Answers 201 with a `Location` header."""
    case = await open_case(principal, title=data.title, family_name=data.family_name, opened_at=data.opened_at)
    return Response(case_json(case), status_code=201, headers={"Location": f"/v1/cases/{case.id}"})


@get(CASE, tags=["cases"], summary="One case")
async def get_case(case_id: FromPath[UUID], principal: Me, get_case: NamedDependency[GetCase]) -> dict[str, Any]:
    """404 when the case does not exist or belongs to another case worker."""
    return case_json(await get_case(principal, case_id))


@get(CASES, tags=["cases"], summary="The cases you may see")
async def list_cases(
    principal: Me,
    list_cases: NamedDependency[ListCases],
    page: FromQuery[int] = 1,
    per_page: FromQuery[int] = DEFAULT_PAGE_SIZE,
) -> dict[str, Any]:
    """Case workers see the cases they opened or are assigned to; supervisors and admins all."""
    found = await list_cases(principal, PageRequest(page, per_page))
    return page_json(found, case_json)


@post(f"{CASE}/assignments", tags=["cases"], summary="Assign a case worker (supervisors, admins)")
async def assign_worker(
    case_id: FromPath[UUID], data: JSONBody[NewAssignment], principal: Me, assign_worker: NamedDependency[AssignWorker]
) -> Response[dict[str, Any]]:
    """201 with the case when the worker is newly assigned, 200 when already assigned; 403 for
    case workers."""
    case, assigned = await assign_worker(principal, case_id, data.worker_sub)
    return Response(case_json(case), status_code=201 if assigned else 200)


@post(CONTACTS, status_code=201, tags=["contacts"], summary="Record a contact")
async def record_contact(
    case_id: FromPath[UUID], data: JSONBody[NewContact], principal: Me, record_contact: NamedDependency[RecordContact]
) -> Response[dict[str, Any]]:
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
    return Response(contact_json(contact), status_code=201, headers={"Location": location})


@get(CONTACTS, tags=["contacts"], summary="A case's contacts, most recent first")
async def list_contacts(
    case_id: FromPath[UUID],
    principal: Me,
    list_contacts: NamedDependency[ListContacts],
    page: FromQuery[int] = 1,
    per_page: FromQuery[int] = DEFAULT_PAGE_SIZE,
) -> dict[str, Any]:
    found = await list_contacts(principal, case_id, PageRequest(page, per_page))
    return page_json(found, contact_json)


@get(CONTACT, tags=["contacts"], summary="One contact")
async def get_contact(
    case_id: FromPath[UUID], contact_id: FromPath[UUID], principal: Me, get_contact: NamedDependency[GetContact]
) -> dict[str, Any]:
    return contact_json(await get_contact(principal, case_id, contact_id))


ROUTES = [open_case, get_case, list_cases, assign_worker, record_contact, list_contacts, get_contact]
