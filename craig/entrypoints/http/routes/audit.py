"""``/v1/audit`` and a case's history: reading the audit trail (itself audited)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from urllib.parse import urlencode
from uuid import UUID

import msgspec
from litestar import Response, get
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery

from craig.domain.audit import AuditAction, AuditEntry, AuditOutcome
from craig.domain.audit_query import AuditFilter, AuditPage
from craig.entrypoints.http.api_contract import SUPERVISORS, answers
from craig.entrypoints.http.dependencies import Me
from craig.usecases.audit.case_history import ShowCaseHistory
from craig.usecases.audit.list_entries import ListAuditEntries

TAGS = ["audit"]
AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]


class AuditEntryView(msgspec.Struct):
    """One recorded action: ids and field names only, never a value of personal data."""

    id: UUID
    seq: int | None
    at: datetime | None
    actor: UUID | None
    actor_role: str | None
    actor_name: str | None
    action: AuditAction
    resource_type: str
    resource_id: str | None
    resource_ids: list[str]
    case_id: UUID | None
    outcome: AuditOutcome
    request_id: str | None
    client_ip: str | None
    changed_fields: list[str]


class AuditPageView(msgspec.Struct):
    items: list[AuditEntryView]
    next_cursor: str | None


def _view(entry: AuditEntry, *, origin: bool) -> AuditEntryView:
    """``origin``: with the request's id and client address (else null, as in a case's history,
    which every worker on the case reads: where a colleague or a supervisor worked from is for
    supervisors, in ``GET /v1/audit``)."""
    return AuditEntryView(
        id=entry.id,
        seq=entry.seq,
        at=entry.at,
        actor=entry.actor,
        actor_role=entry.actor_role,
        actor_name=entry.actor_name,
        action=entry.action,
        resource_type=entry.resource_type,
        resource_id=entry.resource_id,
        resource_ids=list(entry.resource_ids),
        case_id=entry.case_id,
        outcome=entry.outcome,
        request_id=entry.request_id if origin else None,
        client_ip=entry.client_ip if origin else None,
        changed_fields=list(entry.changed_fields),
    )


def _page(page: AuditPage, path: str, *, origin: bool) -> Response[AuditPageView]:
    next_page = f"{path}{urlencode({'cursor': page.next_cursor})}" if page.next_cursor else None
    headers = {"Link": f'<{next_page}>; rel="next"'} if next_page else {}
    return Response(AuditPageView([_view(e, origin=origin) for e in page.items], page.next_cursor), headers=headers)


@get(
    "/audit",
    tags=TAGS,
    summary="The audit trail, newest first (supervisors, admins)",
    opt=answers("invalid-cursor", "invalid-input", roles=SUPERVISORS, optional_headers=("Link",)),
)
async def list_audit_entries(
    principal: Me,
    list_audit_entries: NamedDependency[ListAuditEntries],
    case_id: FromQuery[UUID | None] = None,
    actor: FromQuery[UUID | None] = None,
    action: FromQuery[AuditAction | None] = None,
    resource_type: FromQuery[str | None] = None,
    outcome: FromQuery[AuditOutcome | None] = None,
    since: FromQuery[AwareDatetime | None] = None,
    until: FromQuery[AwareDatetime | None] = None,
    limit: FromQuery[int | None] = None,
    cursor: FromQuery[str | None] = None,
) -> Response[AuditPageView]:
    """Every recorded access and change, filters combined with AND; `since` inclusive, `until`
    exclusive. 403 for case workers. Reading the trail is itself recorded."""
    where = AuditFilter(
        case_id=case_id,
        actor=actor,
        action=action,
        resource_type=resource_type,
        outcome=outcome,
        since=since,
        until=until,
    )
    page = await list_audit_entries(principal, where, limit=limit, cursor=cursor)
    asked: dict[str, object] = {
        "case_id": case_id,
        "actor": actor,
        "action": action,
        "resource_type": resource_type,
        "outcome": outcome,
        "since": since.isoformat() if since else None,
        "until": until.isoformat() if until else None,
        "limit": limit,
    }
    query = urlencode({name: str(value) for name, value in asked.items() if value is not None})
    return _page(page, f"/v1/audit?{query}&" if query else "/v1/audit?", origin=True)


@get(
    "/cases/{case_id:uuid}/history",
    tags=TAGS,
    summary="What changed in a case, newest first",
    opt=answers("invalid-cursor", "invalid-input", optional_headers=("Link",)),
)
async def show_case_history(
    case_id: FromPath[UUID],
    principal: Me,
    show_case_history: NamedDependency[ShowCaseHistory],
    limit: FromQuery[int | None] = None,
    cursor: FromQuery[str | None] = None,
) -> Response[AuditPageView]:
    """Who changed what and when in the case and its contacts, attachments and placements (the
    names of changed fields, never their values). Reads (downloads and replays included) and
    refused attempts are not part of the history, and `request_id` and `client_ip` are null:
    supervisors see all of it in `GET /v1/audit`. For anyone who may see the case; 404
    otherwise."""
    page = await show_case_history(principal, case_id, limit=limit, cursor=cursor)
    suffix = urlencode({"limit": limit}) + "&" if limit is not None else ""
    return _page(page, f"/v1/cases/{case_id}/history?{suffix}", origin=False)


ROUTES = [list_audit_entries, show_case_history]
