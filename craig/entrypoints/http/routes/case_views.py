"""How a case looks over HTTP: one typed view for every case route, with its ETag."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import msgspec

from craig.domain.cases import Case
from craig.entrypoints.http.etags import etag


class CaseView(msgspec.Struct):
    id: UUID
    title: str
    family_name: str | None
    opened_at: datetime
    created_by: UUID
    created_at: datetime
    assigned_workers: list[str]
    status: str
    closed_at: datetime | None
    close_reason: str | None
    referral_id: UUID | None
    updated_at: datetime
    version: int


class CasePage(msgspec.Struct):
    """A keyset page: ``next_cursor`` is null on the last page."""

    items: list[CaseView]
    next_cursor: str | None


class LegacyCasePage(msgspec.Struct):
    """The offset page ``page``/``per_page`` still answer: ``{items, page, per_page, total}``."""

    items: list[CaseView]
    page: int
    per_page: int
    total: int


def case_view(case: Case) -> CaseView:
    return CaseView(
        id=case.id,
        title=case.title,
        family_name=case.family_name,
        opened_at=case.opened_at,
        created_by=case.created_by,
        created_at=case.created_at,
        assigned_workers=sorted(str(worker) for worker in case.assigned_workers),
        status=case.status.value,
        closed_at=case.closed_at,
        close_reason=case.close_reason,
        referral_id=case.referral_id,
        updated_at=case.updated_at,
        version=case.version,
    )


def case_headers(case: Case) -> dict[str, str]:
    return {"ETag": etag(case.version)}
