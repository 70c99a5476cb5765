"""The file types Craig accepts as attachments, each with the magic-byte check its content must pass.

The declared type alone proves nothing: a ``.png`` that is really an executable must be
refused, so every allowed type has a signature check on the body itself.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable

import attrs

from craig.domain.constants import ATTACHMENT_TEXT_SNIFF_BYTES

Matcher = Callable[[bytes], bool]

#: Brands of the ISO base media file format that are HEIF/HEIC still images (phone photos).
_HEIF_BRANDS = frozenset({b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1"})
#: Control characters that never appear in plain text (TAB, LF, FF and CR are fine).
_BINARY_CONTROLS = frozenset(set(range(0x20)) - {0x09, 0x0A, 0x0C, 0x0D}) | {0x7F}


@attrs.frozen
class FileType:
    media_type: str
    description: str
    matches: Matcher = attrs.field(eq=False, repr=False)


def _prefix(*signatures: bytes) -> Matcher:
    return lambda body: any(body.startswith(signature) for signature in signatures)


def _webp(body: bytes) -> bool:
    return body[:4] == b"RIFF" and body[8:12] == b"WEBP"


def _heif(body: bytes) -> bool:
    return body[4:8] == b"ftyp" and body[8:12] in _HEIF_BRANDS


def _text(body: bytes) -> bool:
    """UTF-8 (BOM allowed) without binary control characters; the first 64 KiB decide, with a
    possibly cut last character forgiven."""
    sample = body[:ATTACHMENT_TEXT_SNIFF_BYTES]
    try:
        text = sample.decode("utf-8")
    except UnicodeDecodeError as error:
        if len(body) <= ATTACHMENT_TEXT_SNIFF_BYTES or error.start < len(sample) - 3:
            return False
        text = sample[: error.start].decode("utf-8")
    return not any(ord(char) in _BINARY_CONTROLS for char in text)


def _zip_names(body: bytes) -> list[str] | None:
    if not body.startswith(b"PK\x03\x04"):
        return None
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            return archive.namelist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError):
        return None


def _office_open_xml(main_part: str) -> Matcher:
    """An OOXML package with its main part and no VBA project (a macro file renamed is refused)."""

    def matches(body: bytes) -> bool:
        names = _zip_names(body)
        return (
            names is not None
            and "[Content_Types].xml" in names
            and main_part in names
            and not any(name.lower().endswith("vbaproject.bin") for name in names)
        )

    return matches


def _open_document(media_type: str) -> Matcher:
    """An ODF package: its first member is ``mimetype`` holding the media type (ODF 1.2 §3.3)."""
    marker = b"mimetype" + media_type.encode("ascii")

    def matches(body: bytes) -> bool:
        return body[30 : 38 + len(media_type)] == marker and _zip_names(body) is not None

    return matches


ALLOWED_FILE_TYPES: tuple[FileType, ...] = (
    FileType("application/pdf", "PDF", _prefix(b"%PDF-")),
    FileType("image/png", "PNG", _prefix(b"\x89PNG\r\n\x1a\n")),
    FileType("image/jpeg", "JPEG", _prefix(b"\xff\xd8\xff")),
    FileType("image/gif", "GIF", _prefix(b"GIF87a", b"GIF89a")),
    FileType("image/webp", "WebP", _webp),
    FileType("image/tiff", "TIFF", _prefix(b"II*\x00", b"MM\x00*")),
    FileType("image/heic", "HEIC", _heif),
    FileType("image/heif", "HEIF", _heif),
    FileType("text/plain", "plain text (UTF-8)", _text),
    FileType("text/csv", "CSV (UTF-8)", _text),
    FileType(
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "Word document (DOCX)",
        _office_open_xml("word/document.xml"),
    ),
    FileType(
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "Excel workbook (XLSX)",
        _office_open_xml("xl/workbook.xml"),
    ),
    FileType(
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "PowerPoint presentation (PPTX)",
        _office_open_xml("ppt/presentation.xml"),
    ),
    FileType(
        "application/vnd.oasis.opendocument.text",
        "OpenDocument text (ODT)",
        _open_document("application/vnd.oasis.opendocument.text"),
    ),
    FileType(
        "application/vnd.oasis.opendocument.spreadsheet",
        "OpenDocument spreadsheet (ODS)",
        _open_document("application/vnd.oasis.opendocument.spreadsheet"),
    ),
)

#: Non-standard names some clients send for an allowed type.
MEDIA_TYPE_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg", "image/x-png": "image/png"}


def media_type_essence(content_type: str) -> str:
    """``Text/Plain; charset=utf-8`` -> ``text/plain`` (aliases resolved)."""
    essence = content_type.split(";", 1)[0].strip().lower()
    return MEDIA_TYPE_ALIASES.get(essence, essence)
