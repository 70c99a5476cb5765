"""The two events of an attachment's upload, staged by the upload and by the scanner.

Both share the aggregate ``contact_attachment/<id>``, so they are published in order. Neither
carries the file name: events are stored in the outbox and inboxes unencrypted.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from craig.domain.attachments import Attachment
from craig.domain.constants import ATTACHMENT_FAILURE_REASON_MAX_CHARS
from craig.domain.event_catalogue import CONTACT_ATTACHMENT_UPLOAD_FAILED, CONTACT_ATTACHMENT_UPLOADED
from craig.domain.events import EventEnvelope
from craig.usecases.events.staging import new_event


def upload_failed_event(attachment_id: UUID, contact_id: UUID, reason: str, now: datetime) -> EventEnvelope:
    return new_event(
        CONTACT_ATTACHMENT_UPLOAD_FAILED,
        aggregate_id=attachment_id,
        payload={
            "attachment_id": str(attachment_id),
            "contact_id": str(contact_id),
            "reason": reason[:ATTACHMENT_FAILURE_REASON_MAX_CHARS],
        },
        now=now,
    )


def uploaded_event(attachment: Attachment, case_id: UUID, now: datetime) -> EventEnvelope:
    return new_event(
        CONTACT_ATTACHMENT_UPLOADED,
        aggregate_id=attachment.id,
        payload={
            "attachment_id": str(attachment.id),
            "contact_id": str(attachment.contact_id),
            "case_id": str(case_id),
            # No file name: events are stored in the outbox and inboxes unencrypted.
            "file_size": attachment.file_size,
        },
        now=now,
    )
