"""validate_upload, safe_name and content_disposition_attachment: properties and examples.

The Content-Disposition round trip uses the standard library's RFC 2231 parser (of which
RFC 8187 is the HTTP profile): ``email.message.Message.get_params`` splits the parameters and
``email.utils.collapse_rfc2231_value`` decodes ``filename*=UTF-8''…``. When both parameters are
present RFC 6266 §4.3 says the extended one wins, so the test takes the decoded ``filename*``.
"""

from __future__ import annotations

import struct
import unicodedata
import zipfile
from email.message import Message
from email.utils import collapse_rfc2231_value

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from craig.domain.attachments import (
    ALLOWED_FILE_TYPES,
    EmptyUpload,
    UnsupportedUploadType,
    UploadContentMismatch,
    UploadTooLarge,
    UploadValidation,
    content_disposition_attachment,
    safe_name,
    validate_upload,
)
from craig.domain.constants import ATTACHMENT_FILE_NAME_MAX_BYTES, ZIP_MAX_ENTRIES
from craig.domain.file_names import ascii_fallback
from craig.domain.file_types import download_name
from tests.support.files import ELF_HEADER, EXE_HEADER, docx_bytes, odt_bytes, png_bytes, xlsx_bytes, zip_bytes

pytestmark = pytest.mark.unit

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
ODT = "application/vnd.oasis.opendocument.text"
ALLOWED = [t.media_type for t in ALLOWED_FILE_TYPES]
SMALL = UploadValidation(max_bytes=4096)
LARGE = UploadValidation()
FORBIDDEN_IN_NAMES = set("/\\\"'`\r\n\x00")


def parse_disposition(header: str) -> tuple[str, str]:
    """(the ``filename`` fallback, the decoded ``filename*``), as a standards-following agent reads them."""
    message = Message()
    message["Content-Disposition"] = header
    params = [v for k, v in message.get_params(header="content-disposition") or [] if k == "filename"]
    fallback = next(v for v in params if isinstance(v, str))
    extended = next(v for v in params if isinstance(v, tuple))
    assert extended[0].upper() == "UTF-8"
    return fallback, collapse_rfc2231_value(extended)


# --- safe_name -----------------------------------------------------------------------------------
names = st.text(st.characters(codec="utf-8"), max_size=300) | st.text(max_size=40)


@given(names)
@example("../../etc/passwd")
@example("e\u200b\u0301")
@example("." * 300 + "x")
def test_safe_name_is_clean_bounded_nonempty_and_idempotent(name: str) -> None:
    safe = safe_name(name)
    assert safe
    assert not FORBIDDEN_IN_NAMES & set(safe)
    assert all(unicodedata.category(c) not in {"Cc", "Cf", "Cs", "Cn"} for c in safe)
    assert len(safe.encode("utf-8")) <= ATTACHMENT_FILE_NAME_MAX_BYTES
    assert safe == safe.strip(" .")
    assert unicodedata.is_normalized("NFC", safe)
    assert safe_name(safe) == safe


@given(st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=60))
def test_safe_name_keeps_unicode_letters_whole(stem: str) -> None:
    name = unicodedata.normalize("NFC", f"{stem}.pdf")
    assert safe_name(name) == name


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\ann\\report.pdf", "report.pdf"),
        ("résumé.pdf", "résumé.pdf"),
        ("家族の記録.docx", "家族の記録.docx"),
        ('evil"\r\nSet-Cookie: x.txt', "evil Set-Cookie_ x.txt"),
        ("photo\u202egnp.exe", "photognp.exe"),
        ("  ..hidden  ", "hidden"),
        ("", "attachment"),
        ("../", "attachment"),
        ("a<b>|c?.txt", "a_b__c_.txt"),
    ],
)
def test_safe_name_examples(raw: str, expected: str) -> None:
    assert safe_name(raw) == expected


def test_long_names_keep_their_extension() -> None:
    safe = safe_name("ä" * 500 + ".pdf")
    assert safe.endswith(".pdf") and len(safe.encode()) <= ATTACHMENT_FILE_NAME_MAX_BYTES


# --- content_disposition_attachment ----------------------------------------------------------------
@given(names)
@example('a";\r\nX-Injected: 1.txt')
@example("100% naïve résumé €.pdf")
def test_content_disposition_cannot_inject_and_round_trips(name: str) -> None:
    header = content_disposition_attachment(name)
    assert header.isascii() and header.isprintable()
    assert "\r" not in header and "\n" not in header and "\x00" not in header
    assert header.count('"') == 2  # only the fallback's own delimiters
    assert header.startswith("attachment; ")
    fallback, extended = parse_disposition(header)
    assert extended == safe_name(name)
    assert fallback == ascii_fallback(safe_name(name)) and fallback.isascii()


def test_content_disposition_example() -> None:
    header = content_disposition_attachment("résumé 2026.pdf")
    assert header == "attachment; filename=\"resume 2026.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9%202026.pdf"


# --- validate_upload -----------------------------------------------------------------------------
signatures = {
    "application/pdf": b"%PDF-1.7\n",
    "image/png": png_bytes(),
    "image/jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00",
    "image/gif": b"GIF89a\x01\x00",
    "image/webp": b"RIFF\x24\x00\x00\x00WEBPVP8 ",
    "image/tiff": b"II*\x00\x08\x00\x00\x00",
    "image/heic": b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00",
    "image/heif": b"\x00\x00\x00\x18ftypmif1\x00\x00\x00\x00",
    "text/plain": "Hausbesuch: alles gut ✓\n".encode(),
    "text/csv": b"a,b\n1,2\n",
    DOCX: docx_bytes(),
    XLSX: xlsx_bytes(),
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": None,
    ODT: odt_bytes(),
    "application/vnd.oasis.opendocument.spreadsheet": None,
}


@pytest.mark.parametrize("media_type", [t for t, body in signatures.items() if body is not None])
def test_every_allowed_type_accepts_its_real_content(media_type: str) -> None:
    body = signatures[media_type]
    assert body is not None
    assert validate_upload(f"{media_type.upper()}; name=x", body, SMALL) == media_type


@pytest.mark.parametrize("media_type", ["image/png", "image/jpeg", "application/pdf", "text/plain", DOCX])
@pytest.mark.parametrize("body", [EXE_HEADER, ELF_HEADER], ids=["exe", "elf"])
def test_an_executable_declared_as_an_allowed_type_is_refused(media_type: str, body: bytes) -> None:
    with pytest.raises(UploadContentMismatch):
        validate_upload(media_type, body, SMALL)


def test_office_files_must_be_what_they_claim() -> None:
    with pytest.raises(UploadContentMismatch):
        validate_upload(XLSX, docx_bytes(), SMALL)
    with pytest.raises(UploadContentMismatch):
        validate_upload(DOCX, docx_bytes(with_macros=True), SMALL)
    with pytest.raises(UploadContentMismatch):
        validate_upload("text/plain", "caf\xe9".encode("latin-1"), SMALL)
    assert validate_upload("image/jpg", signatures["image/jpeg"] or b"", SMALL) == "image/jpeg"


def _directory_bomb(entries: int) -> bytes:
    """One local header, then a central directory of ``entries`` entries with one-byte names."""
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, 1, 0) + b"a"
    entry = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0) + b"a"
    directory = entry * entries
    end = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, min(entries, 0xFFFF), min(entries, 0xFFFF), len(directory), len(local), 0
    )
    return local + directory + end


def test_an_archive_whose_directory_no_document_has_is_refused_before_it_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """zipfile builds an object per directory entry in Python: 515,000 empty entries in 25 MB
    took 6 s of CPU and 190 MB per upload before the 415. The directory's end record is read
    first, and zipfile is never asked."""
    bomb = _directory_bomb(50_000)

    def never(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("zipfile read a directory larger than any document's")

    monkeypatch.setattr(zipfile, "ZipFile", never)
    with pytest.raises(UploadContentMismatch):
        validate_upload(DOCX, bomb, LARGE)


def test_an_archive_is_measured_by_its_zip64_end_record_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plain end record of a ZIP64 archive holds 0xFFFF and 0xFFFFFFFF: the real count is
    in the ZIP64 one, for a small document and for a bomb alike."""
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 1)  # zipfile then writes the ZIP64 records
    small = docx_bytes()
    assert b"PK\x06\x06" in small
    assert validate_upload(DOCX, small, SMALL) == DOCX
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 0xFFFF)
    members = {"[Content_Types].xml": b"<Types/>", "word/document.xml": b"<w:document/>"}
    members.update({f"p/{n}": b"" for n in range(ZIP_MAX_ENTRIES + 1)})
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 1)
    crowded = zip_bytes(members)
    with pytest.raises(UploadContentMismatch):
        validate_upload(DOCX, crowded, LARGE)
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 0xFFFF)
    allowed = zip_bytes(dict(list(members.items())[:ZIP_MAX_ENTRIES]))
    assert validate_upload(DOCX, allowed, LARGE) == DOCX  # as many as allowed: read


@given(st.binary(min_size=17, max_size=80), st.sampled_from([*ALLOWED, "x/y"]))
def test_too_large_comes_first(body: bytes, content_type: str) -> None:
    with pytest.raises(UploadTooLarge):
        validate_upload(content_type, b"\x89PNG\r\n\x1a\n" + body, UploadValidation(max_bytes=24))


@given(st.text(max_size=40), st.binary(max_size=64))
def test_types_off_the_list_are_unsupported(content_type: str, body: bytes) -> None:
    assume(content_type.split(";")[0].strip().lower() not in {*ALLOWED, "image/jpg", "image/pjpeg", "image/x-png"})
    with pytest.raises(UnsupportedUploadType) as raised:
        validate_upload(content_type, body, SMALL)
    assert type(raised.value) is UnsupportedUploadType


@pytest.mark.parametrize("media_type", ALLOWED)
def test_empty_files_are_refused(media_type: str) -> None:
    with pytest.raises(EmptyUpload):
        validate_upload(media_type, b"", SMALL)


@given(st.sampled_from(ALLOWED), st.binary(min_size=1, max_size=256))
def test_validate_upload_accepts_or_raises_one_of_its_errors(media_type: str, body: bytes) -> None:
    try:
        assert validate_upload(media_type, body, SMALL) == media_type
    except UploadContentMismatch:
        pass


@given(st.binary(max_size=200))
def test_png_signature_decides_for_png(tail: bytes) -> None:
    assert validate_upload("image/png", b"\x89PNG\r\n\x1a\n" + tail, SMALL) == "image/png"
    assume(not tail.startswith(b"\x89PNG"))
    with pytest.raises(UploadContentMismatch):
        validate_upload("image/png", b"\x00" + tail, SMALL)


def test_text_is_checked_whole_not_by_its_first_part() -> None:
    """A script padded with 70,000 characters of text before its binary tail is not text."""
    padded = b"#" * 70_000 + b"\x00\x01\x02MZ\x90\x00"
    with pytest.raises(UploadContentMismatch):
        validate_upload("text/plain", padded, UploadValidation())
    assert validate_upload("text/plain", "Grüße\tok\r\n".encode() * 10_000, UploadValidation()) == "text/plain"


@pytest.mark.parametrize(
    ("name", "media_type", "offered"),
    [
        ("run.bat", "text/plain", "run.bat.txt"),
        ("page.html", "text/plain", "page.html.txt"),
        ("notes.TXT", "text/plain", "notes.TXT"),
        ("visit.log", "text/plain", "visit.log"),
        ("photo.jpeg", "image/jpeg", "photo.jpeg"),
        ("photo", "image/jpeg", "photo.jpg"),
        ("report.exe", "application/pdf", "report.exe.pdf"),
        ("list.csv", "text/csv", "list.csv"),
    ],
)
def test_a_download_is_named_with_an_ending_of_its_checked_type(name: str, media_type: str, offered: str) -> None:
    assert download_name(name, media_type) == offered


def test_every_allowed_type_has_a_usual_ending() -> None:
    assert all(kind.extensions and kind.extensions[0].startswith(".") for kind in ALLOWED_FILE_TYPES)
