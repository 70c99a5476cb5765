"""What the case, contact and attachment routes read and answer, as typed structs (a case with its
ETag)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

import msgspec

from craig.domain.access import Principal, Role
from craig.domain.attachments import Attachment, ObjectStatus
from craig.domain.cases import Case, CaseStatus
from craig.domain.constants import CASE_FAMILY_NAME_MAX_LENGTH, CASE_TITLE_MAX_LENGTH, CONTACT_SUMMARY_MAX_LENGTH
from craig.domain.contacts import Contact, ContactType
from craig.entrypoints.http.etags import etag
from craig.entrypoints.http.schema_meta import documented

AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]


class NewCase(msgspec.Struct, forbid_unknown_fields=True):
    title: Annotated[str, documented(min_length=1, max_length=CASE_TITLE_MAX_LENGTH, examples=["Doe family"])]
    family_name: Annotated[str, documented(max_length=CASE_FAMILY_NAME_MAX_LENGTH, examples=["Doe"])] | None = None
    opened_at: (
        Annotated[
            AwareDatetime,
            documented(
                description="Defaults to now. From 1900-01-01T00:00:00Z to at most 366 days ahead (422 outside)."
            ),
        ]
        | None
    ) = None


class NewAssignment(msgspec.Struct, forbid_unknown_fields=True):
    worker_sub: UUID


class NewContact(msgspec.Struct, forbid_unknown_fields=True):
    contact_type: Annotated[str, documented(enum=[t.value for t in ContactType], examples=["home_visit"])]
    occurred_at: Annotated[
        AwareDatetime, documented(description="With a time zone; from 1900-01-01 on, not in the future.")
    ]
    summary: Annotated[
        str, documented(min_length=1, max_length=CONTACT_SUMMARY_MAX_LENGTH, examples=["Saw both children."])
    ]


class MeView(msgspec.Struct):
    sub: UUID
    name: str
    role: Role


class CaseView(msgspec.Struct):
    id: UUID
    title: str
    family_name: str | None
    opened_at: datetime
    created_by: UUID
    created_at: datetime
    #: The subjects of the case workers assigned, sorted.
    assigned_workers: list[UUID]
    status: CaseStatus
    closed_at: datetime | None
    close_reason: str | None
    referral_id: UUID | None
    updated_at: datetime
    #: Grows by one with every change; the ETag is made from it.
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


class ContactView(msgspec.Struct):
    id: UUID
    case_id: UUID
    contact_type: ContactType
    occurred_at: datetime
    summary: str
    created_by: UUID
    worker_name: str
    created_at: datetime


class ContactKeysetPage(msgspec.Struct):
    """A keyset page: ``next_cursor`` is null on the last page."""

    items: list[ContactView]
    next_cursor: str | None


class ContactPage(msgspec.Struct):
    items: list[ContactView]
    page: int
    per_page: int
    total: int


class AttachmentView(msgspec.Struct):
    id: UUID
    contact_id: UUID
    attachment_type: str | None
    file_name: str
    content_type: str
    file_size: int
    object_status: ObjectStatus
    uploaded_by: UUID
    worker_name: str
    created_at: datetime


class AttachmentKeysetPage(msgspec.Struct):
    """A keyset page: ``next_cursor`` is null on the last page."""

    items: list[AttachmentView]
    next_cursor: str | None


class AttachmentPage(msgspec.Struct):
    items: list[AttachmentView]
    page: int
    per_page: int
    total: int


def me_view(principal: Principal) -> MeView:
    return MeView(sub=principal.sub, name=principal.name, role=principal.role)


def case_view(case: Case) -> CaseView:
    workers = sorted(case.assigned_workers, key=str)
    return CaseView(
        id=case.id,
        title=case.title,
        family_name=case.family_name,
        opened_at=case.opened_at,
        created_by=case.created_by,
        created_at=case.created_at,
        assigned_workers=workers,
        status=case.status,
        closed_at=case.closed_at,
        close_reason=case.close_reason,
        referral_id=case.referral_id,
        updated_at=case.updated_at,
        version=case.version,
    )


def case_headers(case: Case) -> dict[str, str]:
    return {"ETag": etag(case.version)}


def contact_view(contact: Contact) -> ContactView:
    return ContactView(
        id=contact.id,
        case_id=contact.case_id,
        contact_type=contact.contact_type,
        occurred_at=contact.occurred_at,
        summary=contact.summary,
        created_by=contact.created_by,
        worker_name=contact.worker_name,
        created_at=contact.created_at,
    )


def attachment_view(attachment: Attachment) -> AttachmentView:
    return AttachmentView(
        id=attachment.id,
        contact_id=attachment.contact_id,
        attachment_type=attachment.attachment_type,
        file_name=attachment.file_name,
        content_type=attachment.content_type,
        file_size=attachment.file_size,
        object_status=attachment.object_status,
        uploaded_by=attachment.uploaded_by,
        worker_name=attachment.worker_name,
        created_at=attachment.created_at,
    )
