"""Contact attachments under ``/v1``: multipart upload, metadata, streamed download."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from functools import partial
from typing import Any
from uuid import UUID, uuid5

from litestar import HttpMethod, Request, Response, get
from litestar.datastructures import UploadFile
from litestar.di import NamedDependency
from litestar.enums import RequestEncodingType
from litestar.exceptions import HTTPException
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath, FromQuery, MultipartBody
from litestar.response import Stream
from litestar.types import AsyncAnyCallable

from craig.domain.attachments import ALLOWED_FILE_TYPES, Attachment, content_disposition_attachment
from craig.domain.constants import (
    ATTACHMENT_MAX_BYTES,
    ATTACHMENT_MULTIPART_OVERHEAD_BYTES,
    ATTACHMENT_TYPE_MAX_LENGTH,
)
from craig.domain.errors import InvalidInput
from craig.domain.file_types import download_name
from craig.entrypoints.http import request_transaction
from craig.entrypoints.http.api_contract import answers
from craig.entrypoints.http.dependencies import Me, Paging
from craig.entrypoints.http.form import read_form
from craig.entrypoints.http.head import answers_head
from craig.entrypoints.http.pagination import keyset_of, legacy_page, next_page
from craig.entrypoints.http.routes.case_views import (
    AttachmentKeysetPage,
    AttachmentPage,
    AttachmentView,
    attachment_view,
)
from craig.entrypoints.http.routes.cases import CONTACT, PAGING_PROBLEMS
from craig.ports.object_store import Download
from craig.usecases.attachments import GetAttachment, ListAttachments, OpenAttachment, UploadAttachment
from craig.usecases.listings.list_attachment_page import ListAttachmentPage

ATTACHMENTS = f"{CONTACT}/attachments"
ATTACHMENT = f"{ATTACHMENTS}/{{attachment_id:uuid}}"
#: Names the attachment ids derived from idempotency slots (UUIDv5, see ``_retry_identity``).
RETRY_ID_NAMESPACE = UUID("6c1f8a3e-3b0e-4d7a-9a51-0d5d9a1e2c47")


class MissingFilePart(InvalidInput):
    code = "attachment-file-missing"


_BINARY = {"schema": {"type": "string", "format": "binary"}}
#: The upload form, as Swagger UI and generators need it (the handler reads the parts itself).
UPLOAD_FORM = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "title": "AttachmentUpload",
                "required": ["file"],
                "properties": {
                    "file": {
                        "type": "string",
                        "format": "binary",
                        "description": "The file, with its file name and media type: one of "
                        + ", ".join(t.media_type for t in ALLOWED_FILE_TYPES)
                        + f". At most {ATTACHMENT_MAX_BYTES} bytes by default (`CRAIG_ATTACHMENTS__MAX_BYTES`).",
                    },
                    "attachment_type": {
                        "type": "string",
                        "maxLength": ATTACHMENT_TYPE_MAX_LENGTH,
                        "description": "What the file is, in your words (e.g. `school report`).",
                    },
                },
            },
            "encoding": {"file": {"contentType": ", ".join(t.media_type for t in ALLOWED_FILE_TYPES)}},
        }
    },
}
#: The download: the stored file, with the media type it was uploaded with.
DOWNLOAD_CONTENT = {
    "application/octet-stream": _BINARY,
    **{file_type.media_type: _BINARY for file_type in ALLOWED_FILE_TYPES},
}


class AttachmentUploadRoute(HTTPRouteHandler):
    """A POST whose body limit is ``attachments.max_bytes`` + multipart framing of the app that
    serves it (the idempotency layer and Litestar both read ``request_max_body_size``, so a big
    file gets 413 while it streams in, before it is read whole). A property, because route
    handlers are made at import time and the limit is a setting."""

    @property
    def request_max_body_size(self) -> int:
        try:
            max_bytes = int(self.app.state.attachment_max_bytes)
        except (AttributeError, TypeError):  # not (yet) served by a Craig app
            max_bytes = ATTACHMENT_MAX_BYTES
        return max_bytes + ATTACHMENT_MULTIPART_OVERHEAD_BYTES

    @request_max_body_size.setter
    def request_max_body_size(self, value: object) -> None:
        """Litestar assigns the decorator argument; the setting wins."""

    def resolve_before_request(self) -> AsyncAnyCallable | None:
        """The hook the app (or a router) sets, then :func:`_read_form`."""
        return partial(_read_form, super().resolve_before_request())


async def _read_form(outer: AsyncAnyCallable | None, request: Request[Any, Any, Any]) -> Any:
    """Reads the multipart form before Litestar extracts ``data`` (it reuses the parsed form), with
    :func:`~craig.entrypoints.http.form.read_form`: a text part in a charset other than UTF-8,
    US-ASCII or ISO-8859-1, longer than 64 KiB, or not in its charset is a 400
    ``invalid-request`` (Litestar decoded any charset named, the slowest on the event loop, and
    some raised a 500). A body that is not ``multipart/form-data`` is refused first, as a
    415 ``unsupported-media-type`` like a JSON route's body sent as anything but JSON: Litestar
    would parse any body with a ``boundary`` parameter as a form, whatever its media type."""
    if outer is not None:
        answer = await outer(request)
        if answer is not None:
            return answer
    if request.content_type[0] != RequestEncodingType.MULTI_PART:
        raise HTTPException(status_code=415, detail=_SEND_AS_FORM)
    boundary = request.content_type[1].get("boundary")
    if boundary:
        await read_form(request, boundary)
    return None


_SEND_AS_FORM = "send the file as multipart/form-data in a part named `file` (with a filename)"


def _one_file(form: dict[str, Any]) -> UploadFile:
    part = form.get("file")
    if isinstance(part, list):
        raise MissingFilePart("send exactly one `file` part")
    if not isinstance(part, UploadFile):
        raise MissingFilePart(_SEND_AS_FORM)
    return part


def _retry_identity(request: Request[Any, Any, Any]) -> UUID | None:
    """With an ``Idempotency-Key``, the attachment id is derived from the idempotency slot's
    identity, so a retry in that slot (after a lost response, a failure or a crash) resumes the
    first attempt instead of duplicating it, while the same key used again after its slot was
    purged makes a new slot and so a new attachment."""
    bound = request_transaction.current()
    slot_id = bound.slot_id if bound is not None else None
    return None if slot_id is None else uuid5(RETRY_ID_NAMESPACE, slot_id.hex)


def _optional_text(form: dict[str, Any], name: str) -> str | None:
    value = form.get(name)
    if value is None or isinstance(value, str):
        return value
    raise InvalidInput(f"`{name}` must be a single text field")


@AttachmentUploadRoute(
    ATTACHMENTS,
    http_method=HttpMethod.POST,
    status_code=201,
    tags=["attachments"],
    summary="Upload an attachment",
    opt=answers(
        "attachment-file-missing",
        "attachment-too-large",
        "unsupported-attachment-type",
        "attachment-content-mismatch",
        "empty-attachment",
        "invalid-input",
        "conflict",
        "case-closed",
        headers=("Location",),
        request_body=UPLOAD_FORM,
    ),
)
async def upload_attachment(
    case_id: FromPath[UUID],
    contact_id: FromPath[UUID],
    data: MultipartBody[dict[str, Any]],
    request: Request[Any, Any, Any],
    principal: Me,
    upload_attachment: NamedDependency[UploadAttachment],
) -> Response[AttachmentView]:
    """multipart/form-data: `file` (required), `attachment_type` (optional). 413 when too large,
    415 when the type is not allowed or the content does not match it, 422 when the file is empty
    or missing, 503 when the object store failed (nothing kept: retry with the same
    Idempotency-Key)."""
    upload = _one_file(data)
    attachment_type = _optional_text(data, "attachment_type")
    try:
        body = await upload.read()
    finally:
        await upload.close()
    attachment = await upload_attachment(
        principal,
        case_id,
        contact_id,
        file_name=upload.filename or "",
        content_type=upload.content_type or "",
        body=body,
        attachment_type=attachment_type,
        attachment_id=_retry_identity(request),
    )
    location = f"/v1/cases/{case_id}/contacts/{contact_id}/attachments/{attachment.id}"
    return Response(attachment_view(attachment), status_code=201, headers={"Location": location})


@get(
    ATTACHMENTS,
    tags=["attachments"],
    summary="A contact's attachments",
    opt=answers(*PAGING_PROBLEMS, "invalid-input", optional_headers=("Link",)),
)
async def list_attachments(
    request: Request[Any, Any, Any],
    case_id: FromPath[UUID],
    contact_id: FromPath[UUID],
    principal: Me,
    cursors: Paging,
    list_attachments: NamedDependency[ListAttachments],
    list_attachment_page: NamedDependency[ListAttachmentPage],
    limit: FromQuery[int | None] = None,
    cursor: FromQuery[str | None] = None,
    page: FromQuery[int | None] = None,
    per_page: FromQuery[int | None] = None,
) -> Response[AttachmentKeysetPage | AttachmentPage]:
    """Every status: `pending` ones are still being stored (or are about to be reconciled).
    Keyset pages (`limit`, `cursor`); `page`/`per_page` still answer the old offset page."""
    legacy = legacy_page(page, per_page, limit=limit, cursor=cursor)
    if legacy is not None:
        found = await list_attachments(principal, case_id, contact_id, legacy)
        views = [attachment_view(a) for a in found.items]
        return Response(AttachmentPage(views, found.page, found.per_page, found.total))
    keyset = keyset_of(request, cursors, limit, cursor, (datetime, UUID))
    result = await list_attachment_page(principal, case_id, contact_id, keyset)
    next_cursor, headers = next_page(request, cursors, result.next_after)
    return Response(AttachmentKeysetPage([attachment_view(a) for a in result.items], next_cursor), headers=headers)


@get(ATTACHMENT, tags=["attachments"], summary="An attachment's metadata")
async def get_attachment(
    case_id: FromPath[UUID],
    contact_id: FromPath[UUID],
    attachment_id: FromPath[UUID],
    principal: Me,
    get_attachment: NamedDependency[GetAttachment],
) -> AttachmentView:
    """Any status; only a `present` attachment can be downloaded."""
    return attachment_view(await get_attachment(principal, case_id, contact_id, attachment_id))


async def _chunks(download: Download) -> AsyncIterator[bytes]:
    try:
        async for chunk in download.chunks:
            yield chunk
    finally:
        await download.aclose()


@get(
    f"{ATTACHMENT}/content",
    tags=["attachments"],
    summary="Download an attachment",
    opt=answers("conflict", headers=("Content-Disposition",), response_content=DOWNLOAD_CONTENT),
)
async def download_attachment(
    case_id: FromPath[UUID],
    contact_id: FromPath[UUID],
    attachment_id: FromPath[UUID],
    principal: Me,
    request: Request[Any, Any, Any],
    open_attachment: NamedDependency[OpenAttachment],
) -> Stream:
    """The blob, streamed, as an attachment (never rendered inline). 404 while pending or failed."""
    if answers_head(request.scope):
        # A HEAD sends no content: the blob is not read (the store is asked its size), and the
        # audit trail records a read of the attachment, not a download that never happened.
        attachment, size = await open_attachment.head(principal, case_id, contact_id, attachment_id)
        return _download(attachment, size, _nothing())
    attachment, download = await open_attachment(principal, case_id, contact_id, attachment_id)
    return _download(attachment, download.size, _chunks(download))


def _download(attachment: Attachment, size: int, content: AsyncIterator[bytes]) -> Stream:
    headers = {
        "Content-Disposition": content_disposition_attachment(
            download_name(attachment.file_name, attachment.content_type)
        ),
        "Content-Length": str(size),
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "private, no-store",
        "Content-Security-Policy": "default-src 'none'; sandbox",
    }
    return Stream(content, media_type=attachment.content_type, headers=headers)


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield b""  # an async generator with nothing in it


ROUTES = [upload_attachment, list_attachments, get_attachment, download_attachment]
