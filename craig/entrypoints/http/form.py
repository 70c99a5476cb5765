"""A ``multipart/form-data`` body read with the parser Litestar uses, under Craig's own rules.

Litestar decodes each text part in whatever charset the part names, on the event loop, before
any limit applies to it. Python's ``punycode`` codec is pure Python and quadratic: a 400 KB text
part naming it held every other request of the process for seconds (a 25 MB one, for hours); a
charset holding a NUL raised ``ValueError`` (a 500). So a form is parsed here, with the same
parser (``multipart.PushMultipartParser``: the parts found are the ones Litestar would find), and

* a text part (no filename) may name only UTF-8, US-ASCII or ISO-8859-1, whose codecs are
  written in C and linear; any other charset is a 400;
* a text part holds at most ``FORM_TEXT_PART_MAX_BYTES`` (the form's fields are short: an
  attachment type is at most 100 characters); beyond, a 400 before any more of it is kept;
* bytes that are not in the part's charset, or a form that is not valid multipart, are a 400.

The fields are handed to Litestar's request as its parsed form, in the shape Litestar gives
(one value, or a list of several), so the route's ``data`` is read from them and the body is
not parsed twice.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from litestar import Request
from litestar.datastructures import UploadFile
from litestar.exceptions import ClientException
from multipart import (  # type: ignore[import-untyped]
    MultipartSegment,
    ParserError,
    ParserLimitReached,
    PushMultipartParser,
)

from craig.domain.constants import FORM_TEXT_PART_MAX_BYTES

#: The charsets a text part may name (lower case), each decoded by a linear codec written in C.
TEXT_CHARSETS = frozenset({"utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "latin-1", "latin1"})


async def read_form(request: Request[Any, Any, Any], boundary: str) -> None:
    """Read the form of ``request`` (see the module) into Litestar's parsed form."""
    fields: defaultdict[str, list[Any]] = defaultdict(list)
    data: UploadFile | bytearray = bytearray()
    segment: MultipartSegment | None = None
    stream = request.stream()
    try:
        with PushMultipartParser(boundary.encode(), max_segment_count=request.app.multipart_form_part_limit) as parser:
            chunk = await anext(stream, b"")
            while not parser.closed:
                for part in parser.parse(chunk):
                    if isinstance(part, MultipartSegment):
                        segment = part
                        if segment.filename:
                            data = UploadFile(
                                content_type=segment.content_type or "text/plain",
                                filename=segment.filename,
                                headers=dict(segment.headerlist),
                            )
                        else:
                            data = bytearray()
                            _check_charset(segment)
                    elif part:
                        if isinstance(data, UploadFile):
                            await data.write(part)
                        else:
                            data.extend(part)
                            if len(data) > FORM_TEXT_PART_MAX_BYTES:
                                raise ClientException(
                                    f"a text part of the form holds more than {FORM_TEXT_PART_MAX_BYTES} bytes"
                                )
                    else:  # the end of a part
                        if segment is None:
                            raise ClientException("Unexpected eof in multipart/form-data")
                        if isinstance(data, UploadFile):
                            await data.seek(0)
                            fields[segment.name].append(data)
                        else:
                            fields[segment.name].append(_decoded(data, segment))
                        data, segment = bytearray(), None
                chunk = await anext(stream, b"")
    except ParserError:
        await _close(data, fields)
        raise ClientException("Invalid multipart/form-data") from None
    except ParserLimitReached:
        await _close(data, fields)
        raise ClientException("Request Entity Too Large") from None
    except BaseException:
        await _close(data, fields)
        raise
    # Litestar's own cache, in Litestar's shape: request.form() and the route's ``data`` read it
    request._connection_state.form = {name: values if len(values) > 1 else values[0] for name, values in fields.items()}


def _check_charset(segment: MultipartSegment) -> None:
    charset = segment.charset
    if charset is not None and charset.lower() not in TEXT_CHARSETS:
        raise ClientException(
            f"a text part of the form may name the charset UTF-8, US-ASCII or ISO-8859-1 only, not {charset[:40]!r}"
        )


def _decoded(data: bytearray, segment: MultipartSegment) -> str:
    try:
        return data.decode(segment.charset or "utf-8")
    except UnicodeError:
        raise ClientException("a text part of the form cannot be decoded in its charset") from None


async def _close(data: UploadFile | bytearray, fields: dict[str, list[Any]]) -> None:
    if isinstance(data, UploadFile):
        await data.close()
    for values in fields.values():
        for value in values:
            if isinstance(value, UploadFile):
                await value.close()
