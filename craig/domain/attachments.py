"""Contact attachments: upload validation, the two-phase object status, safe names.

An attachment row is written before its blob (Phase 1: ``pending``), then promoted to
``present`` once the blob is stored (Phase 2). ``failed`` marks a row whose stored object does
not match it (see the scanner); it is kept for an operator, never served.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from craig.domain.constants import ATTACHMENT_MAX_BYTES, ATTACHMENT_TYPE_MAX_LENGTH
from craig.domain.errors import InvalidInput
from craig.domain.file_names import content_disposition_attachment, safe_name
from craig.domain.file_types import ALLOWED_FILE_TYPES, FileType, media_type_essence

__all__ = [
    "ALLOWED_FILE_TYPES",
    "Attachment",
    "EmptyUpload",
    "ObjectStatus",
    "UnsupportedUploadType",
    "UploadContentMismatch",
    "UploadTooLarge",
    "UploadValidation",
    "contact_object_key",
    "content_disposition_attachment",
    "new_attachment",
    "safe_name",
    "validate_upload",
]

CONTACT_OBJECT_PREFIX = "cases/contacts/"


class ObjectStatus(enum.StrEnum):
    PENDING = "pending"
    PRESENT = "present"
    FAILED = "failed"


@attrs.frozen(kw_only=True)
class Attachment:
    id: UUID
    contact_id: UUID
    attachment_type: str | None
    file_name: str
    content_type: str
    file_size: int
    object_key: str
    object_status: ObjectStatus
    uploaded_by: UUID
    worker_name: str
    created_at: datetime

    @property
    def downloadable(self) -> bool:
        return self.object_status is ObjectStatus.PRESENT


# --- validation ---------------------------------------------------------------------------------


class UploadTooLarge(InvalidInput):
    """HTTP 413."""

    code = "attachment-too-large"

    def __init__(self, size: int, max_bytes: int) -> None:
        super().__init__(f"the file is {size} bytes; attachments may be at most {max_bytes} bytes")
        self.problem_extra: dict[str, Any] = {"max_bytes": max_bytes}


class UnsupportedUploadType(InvalidInput):
    """HTTP 415: the declared type is not on the allowed list."""

    code = "unsupported-attachment-type"

    def __init__(self, detail: str, allowed: tuple[FileType, ...]) -> None:
        super().__init__(detail)
        self.problem_extra: dict[str, Any] = {"allowed_types": [t.media_type for t in allowed]}


class UploadContentMismatch(UnsupportedUploadType):
    """HTTP 415: the content's magic bytes do not match the declared type."""

    code = "attachment-content-mismatch"


class EmptyUpload(InvalidInput):
    """HTTP 422."""

    code = "empty-attachment"

    def __init__(self) -> None:
        super().__init__("the file is empty; attach a file with content")


@attrs.frozen
class UploadValidation:
    """What an upload must satisfy: a size limit and the allowed types (with their signatures)."""

    max_bytes: int = ATTACHMENT_MAX_BYTES
    allowed: tuple[FileType, ...] = ALLOWED_FILE_TYPES

    def file_type(self, media_type: str) -> FileType | None:
        return next((t for t in self.allowed if t.media_type == media_type), None)


def validate_upload(content_type: str, body: bytes, validation: UploadValidation) -> str:
    """Check an upload before anything is written; return its normalized media type.

    In order: too large (:class:`UploadTooLarge`), type not allowed
    (:class:`UnsupportedUploadType`), empty (:class:`EmptyUpload`), magic bytes that do not
    match the declared type (:class:`UploadContentMismatch`).
    """
    if len(body) > validation.max_bytes:
        raise UploadTooLarge(len(body), validation.max_bytes)
    media_type = media_type_essence(content_type)
    file_type = validation.file_type(media_type)
    if file_type is None:
        allowed = ", ".join(t.description for t in validation.allowed)
        raise UnsupportedUploadType(
            f"files of type {media_type or 'unknown'!r} are not accepted; allowed: {allowed}",
            validation.allowed,
        )
    if not body:
        raise EmptyUpload()
    if not file_type.matches(body):
        raise UploadContentMismatch(
            f"the file was declared as {file_type.description} ({media_type}) but its content is not",
            validation.allowed,
        )
    return media_type


# --- construction ---------------------------------------------------------------------------------


def contact_object_key(case_id: UUID, contact_id: UUID, object_id: UUID) -> str:
    """``cases/contacts/{case_id}/{contact_id}/{object_id}``: ids only. The file name is personal
    data, stored encrypted in the row, so it stays out of the key (a plaintext column and the
    object store's listing). Rows written with the earlier layout, which ended in
    ``/{safe_name}``, keep their keys."""
    return f"{CONTACT_OBJECT_PREFIX}{case_id}/{contact_id}/{object_id}"


def _attachment_type(raw: str | None) -> str | None:
    if raw is None or not raw.strip():
        return None
    kind = raw.strip()
    if len(kind) > ATTACHMENT_TYPE_MAX_LENGTH:
        raise InvalidInput(
            f"attachment_type must be at most {ATTACHMENT_TYPE_MAX_LENGTH} characters", field="attachment_type"
        )
    if not kind.isprintable():
        raise InvalidInput("attachment_type must not contain control characters", field="attachment_type")
    return kind


def new_attachment(
    *,
    id: UUID,
    case_id: UUID,
    contact_id: UUID,
    attachment_type: str | None,
    file_name: str,
    content_type: str,
    file_size: int,
    uploaded_by: UUID,
    worker_name: str,
    now: datetime,
    object_id: UUID | None = None,
) -> Attachment:
    """A ``pending`` attachment, its blob stored under ``object_id`` (by default its own id).

    The upload gives every row it makes a fresh ``object_id``, also when a retry makes the row
    again under the same attachment id: a blob its first attempt left behind (the put failed
    after all, and the row was removed) is an orphan the scanner may delete at any moment, and
    the retry's blob must never be at that key."""
    name = safe_name(file_name)
    return Attachment(
        id=id,
        contact_id=contact_id,
        attachment_type=_attachment_type(attachment_type),
        file_name=name,
        content_type=content_type,
        file_size=file_size,
        object_key=contact_object_key(case_id, contact_id, object_id or id),
        object_status=ObjectStatus.PENDING,
        uploaded_by=uploaded_by,
        worker_name=worker_name,
        created_at=now,
    )


def attachment_key(attachment: Attachment) -> tuple[datetime, UUID]:
    """A contact's attachments' order (oldest first): ``created_at``, then id."""
    return (attachment.created_at, attachment.id)
