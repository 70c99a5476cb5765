"""``/v1/exchange``: partners, transactions and send jobs; translate HTTP to the exchange use cases.

A failing partner read is a 502 ``upstream`` problem naming the upstream path;
the body of a partner's answer of the wrong shape is ``upstream_deserialize``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec
from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody

from craig.domain.access import Role
from craig.domain.constants import DEFAULT_PAGE_SIZE
from craig.domain.exchange import JobStatus, SendJob
from craig.domain.pages import Page, PageRequest
from craig.domain.partner_records import PartnerRecord
from craig.domain.partners import Partner, shown_url
from craig.entrypoints.http.api_contract import SUPERVISORS, answers
from craig.entrypoints.http.dependencies import Me, Paging
from craig.entrypoints.http.pagination import keyset_of, legacy_page, next_page
from craig.entrypoints.http.problems import ProblemException
from craig.entrypoints.http.routes.cases import PAGING_PROBLEMS
from craig.ports.exchange import UpstreamError
from craig.usecases.exchange import (
    GetTransaction,
    ListPartners,
    PartnerRegistration,
    ReadPartnerRecords,
    RegisterPartner,
    RetrySendJob,
    ShowPartner,
    StartTransaction,
)
from craig.usecases.listings.list_partner_page import ListPartnerPage

TAGS = ["exchange"]


class NewPartnerBody(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    base_url: str
    token_url: str
    client_id: str
    client_secret: str
    rate_limit_rpm: int | None = None
    send_path: str | None = None
    records_path: str | None = None


class PartnerView(msgspec.Struct):
    """A partner as the API shows it: the client secret is never returned."""

    id: UUID
    name: str
    base_url: str
    token_url: str
    client_id: str
    rate_limit_rpm: int | None
    effective_rate_limit_rpm: int
    send_path: str
    records_path: str
    created_at: datetime


class PartnerPage(msgspec.Struct):
    items: list[PartnerView]
    page: int
    per_page: int
    total: int


class PartnerKeysetPage(msgspec.Struct):
    items: list[PartnerView]
    next_cursor: str | None


class RecordView(msgspec.Struct):
    id: str
    type: str
    updated_at: datetime | None
    data: dict[str, Any]


class RecordPage(msgspec.Struct):
    items: list[RecordView]
    page: int
    per_page: int
    total: int


class PartnerDetail(msgspec.Struct):
    partner: PartnerView
    recent_records: RecordPage
    #: What could not be read (``"<partner> <path>: <why>"``); empty when everything answered.
    degraded: list[str]


class NewTransactionBody(msgspec.Struct, forbid_unknown_fields=True):
    partner_ids: list[UUID]
    payload: dict[str, Any]


class JobSummary(msgspec.Struct):
    id: UUID
    partner_id: UUID
    status: JobStatus
    correlation_id: UUID


class TransactionAccepted(msgspec.Struct):
    id: UUID
    jobs: list[JobSummary]


class JobView(msgspec.Struct):
    id: UUID
    partner_id: UUID
    status: JobStatus
    attempts: int
    last_error: str | None
    next_attempt_at: datetime
    correlation_id: UUID
    created_at: datetime
    completed_at: datetime | None


class TransactionView(msgspec.Struct):
    id: UUID
    created_by: UUID
    created_at: datetime
    jobs: list[JobView]


def _partner(p: Partner) -> PartnerView:
    return PartnerView(
        id=p.id,
        name=p.name,
        base_url=shown_url(p.base_url),
        token_url=shown_url(p.token_url),
        client_id=p.client_id,
        rate_limit_rpm=p.rate_limit_rpm,
        effective_rate_limit_rpm=p.effective_rate_limit_rpm,
        send_path=p.send_path,
        records_path=p.records_path,
        created_at=p.created_at,
    )


def _records(page: Page[PartnerRecord]) -> RecordPage:
    items = [RecordView(r.id, r.type, r.updated_at, dict(r.data)) for r in page.items]
    return RecordPage(items=items, page=page.page, per_page=page.per_page, total=page.total)


def _job(job: SendJob) -> JobView:
    return JobView(
        id=job.id,
        partner_id=job.partner_id,
        status=job.status,
        attempts=job.attempts,
        last_error=job.last_error,
        next_attempt_at=job.next_attempt_at,
        correlation_id=job.correlation_id,
        created_at=job.created_at,
        completed_at=job.completed_at,
    )


@asynccontextmanager
async def _upstream_as_502() -> AsyncIterator[None]:
    try:
        yield
    except UpstreamError as error:
        raise ProblemException(
            502, error.code, f"the partner's {error.path} failed: {error.detail}", extra={"upstream_path": error.path}
        ) from error


@post(
    "/exchange/partners",
    status_code=201,
    tags=TAGS,
    summary="Register a partner agency (admin)",
    opt=answers("invalid-partner", "partner-name-taken", roles=(Role.ADMIN,), headers=("Location",)),
)
async def register_partner(
    data: JSONBody[NewPartnerBody], principal: Me, register_partner: NamedDependency[RegisterPartner]
) -> Response[PartnerView]:
    command = PartnerRegistration(**msgspec.structs.asdict(data))
    partner = await register_partner(principal, command)
    return Response(_partner(partner), status_code=201, headers={"Location": f"/v1/exchange/partners/{partner.id}"})


@get(
    "/exchange/partners",
    tags=TAGS,
    summary="Partners by name, paginated",
    opt=answers(*PAGING_PROBLEMS, "invalid-input", optional_headers=("Link",)),
)
async def list_partners(
    request: Request[Any, Any, Any],
    cursors: Paging,
    list_partners: NamedDependency[ListPartners],
    list_partner_page: NamedDependency[ListPartnerPage],
    limit: FromQuery[int | None] = None,
    cursor: FromQuery[str | None] = None,
    page: FromQuery[int | None] = None,
    per_page: FromQuery[int | None] = None,
) -> Response[PartnerPage | PartnerKeysetPage]:
    """Keyset pages (`limit`, `cursor`); `page`/`per_page` still answer the old offset page."""
    legacy = legacy_page(page, per_page, limit=limit, cursor=cursor)
    if legacy is not None:
        result = await list_partners(legacy)
        return Response(PartnerPage([_partner(p) for p in result.items], result.page, result.per_page, result.total))
    found = await list_partner_page(keyset_of(request, cursors, limit, cursor, (str, UUID)))
    next_cursor, headers = next_page(request, cursors, found.next_after)
    return Response(PartnerKeysetPage([_partner(p) for p in found.items], next_cursor), headers=headers)


@get("/exchange/partners/{partner_id:uuid}", tags=TAGS, summary="A partner and a preview of its records")
async def show_partner(
    partner_id: FromPath[UUID], principal: Me, show_partner: NamedDependency[ShowPartner]
) -> PartnerDetail:
    overview = await show_partner(principal, partner_id)
    return PartnerDetail(_partner(overview.partner), _records(overview.recent_records), overview.degraded)


@get(
    "/exchange/partners/{partner_id:uuid}/records",
    tags=TAGS,
    summary="One page of the partner's records",
    opt=answers("upstream", "upstream_deserialize"),
)
async def list_partner_records(
    partner_id: FromPath[UUID],
    principal: Me,
    read_partner_records: NamedDependency[ReadPartnerRecords],
    page: FromQuery[int] = 1,
    per_page: FromQuery[int] = DEFAULT_PAGE_SIZE,
) -> RecordPage:
    request = PageRequest(page=page, per_page=per_page)
    async with _upstream_as_502():
        return _records(await read_partner_records(principal, partner_id, request))


@post(
    "/exchange/transactions",
    status_code=202,
    tags=TAGS,
    summary="Send a payload to partners",
    opt=answers("invalid-exchange-transaction", "unknown-partners", headers=("Location",)),
)
async def start_transaction(
    data: JSONBody[NewTransactionBody], principal: Me, start_exchange_transaction: NamedDependency[StartTransaction]
) -> Response[TransactionAccepted]:
    view = await start_exchange_transaction(principal, data.partner_ids, data.payload)
    body = TransactionAccepted(
        id=view.transaction.id,
        jobs=[JobSummary(j.id, j.partner_id, j.status, j.correlation_id) for j in view.jobs],
    )
    location = f"/v1/exchange/transactions/{view.transaction.id}"
    return Response(body, status_code=202, headers={"Location": location})


@get("/exchange/transactions/{transaction_id:uuid}", tags=TAGS, summary="A transaction and its send jobs")
async def show_transaction(
    transaction_id: FromPath[UUID], principal: Me, get_exchange_transaction: NamedDependency[GetTransaction]
) -> TransactionView:
    view = await get_exchange_transaction(principal, transaction_id)
    t = view.transaction
    return TransactionView(t.id, t.created_by, t.created_at, [_job(j) for j in view.jobs])


@post(
    "/exchange/jobs/{job_id:uuid}/retry",
    status_code=202,
    tags=TAGS,
    summary="Requeue a failed job (supervisor)",
    opt=answers("invalid-job-transition", roles=SUPERVISORS),
)
async def retry_job(job_id: FromPath[UUID], principal: Me, retry_send_job: NamedDependency[RetrySendJob]) -> JobView:
    return _job(await retry_send_job(principal, job_id))


ROUTES = [
    register_partner,
    list_partners,
    show_partner,
    list_partner_records,
    start_transaction,
    show_transaction,
    retry_job,
]
