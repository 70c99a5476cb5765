"""Attachments of a contact: the two-phase upload, reads, downloads, and the scanner that
reconciles rows and blobs."""

from craig.usecases.attachments.events import upload_failed_event, uploaded_event
from craig.usecases.attachments.get_attachment import GetAttachment, GetAttachmentWork
from craig.usecases.attachments.list_attachments import ListAttachments, ListAttachmentsWork
from craig.usecases.attachments.open_attachment import OpenAttachment, OpenAttachmentWork
from craig.usecases.attachments.scan_attachments import (
    CONTACT_ATTACHMENTS,
    REGISTERED_TABLES,
    AttachmentScanner,
    AttachmentScannerWork,
    ScannedTable,
    ScanReport,
)
from craig.usecases.attachments.upload_attachment import UploadAttachment, UploadAttachmentWork

__all__ = [
    "CONTACT_ATTACHMENTS",
    "REGISTERED_TABLES",
    "AttachmentScanner",
    "AttachmentScannerWork",
    "GetAttachment",
    "GetAttachmentWork",
    "ListAttachments",
    "ListAttachmentsWork",
    "OpenAttachment",
    "OpenAttachmentWork",
    "ScanReport",
    "ScannedTable",
    "UploadAttachment",
    "UploadAttachmentWork",
    "upload_failed_event",
    "uploaded_event",
]
