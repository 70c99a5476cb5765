"""Real files for upload tests: a valid PNG, OOXML and ODF packages, an executable header."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_bytes(width: int = 4, height: int = 3) -> bytes:
    """A valid truecolour PNG (decodable by any image library)."""
    raw = b"".join(
        b"\x00" + b"".join(bytes((x * 40 % 256, y * 60 % 256, 128)) for x in range(width)) for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(raw))
        + _png_chunk(b"IEND", b"")
    )


def zip_bytes(members: dict[str, bytes], *, stored_first: bool = False) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for index, (name, data) in enumerate(members.items()):
            compress = zipfile.ZIP_STORED if stored_first and index == 0 else zipfile.ZIP_DEFLATED
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=compress)
    return buffer.getvalue()


def docx_bytes(*, with_macros: bool = False) -> bytes:
    members = {
        "[Content_Types].xml": b"<Types/>",
        "_rels/.rels": b"<Relationships/>",
        "word/document.xml": b"<w:document/>",
    }
    if with_macros:
        members["word/vbaProject.bin"] = b"\xd0\xcf\x11\xe0"
    return zip_bytes(members)


def xlsx_bytes() -> bytes:
    return zip_bytes({"[Content_Types].xml": b"<Types/>", "xl/workbook.xml": b"<workbook/>"})


def odt_bytes() -> bytes:
    return zip_bytes(
        {"mimetype": b"application/vnd.oasis.opendocument.text", "content.xml": b"<office:document/>"},
        stored_first=True,
    )


#: The first bytes of a Windows executable and of a Linux one.
EXE_HEADER = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00" + b"\x00" * 48
ELF_HEADER = b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 56
