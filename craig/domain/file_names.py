"""File names that are safe to store and to send back (RFC 6266 / RFC 8187)."""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import quote

from craig.domain.constants import ATTACHMENT_FILE_EXTENSION_MAX_CHARS, ATTACHMENT_FILE_NAME_MAX_BYTES

FALLBACK_NAME = "attachment"
#: Reserved on Windows (and awkward everywhere): replaced, not dropped, to keep names readable.
_RESERVED = frozenset("<>:|?*")
#: Quotes end quoted-strings in headers; dropped outright.
_QUOTES = frozenset("\"'`")
#: Control, format (bidi overrides, zero-width), surrogate and unassigned code points.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Cn"})
_SPACES = re.compile(r"\s+")
#: RFC 8187 attr-char beyond ALPHA / DIGIT and the ``-._~`` that ``quote`` always keeps.
_ATTR_CHAR_EXTRA = "!#$&+^`|"


def _clean_char(char: str) -> str:
    if char in _QUOTES or (unicodedata.category(char) in _INVISIBLE_CATEGORIES and not char.isspace()):
        return ""
    if char in _RESERVED:
        return "_"
    return char


def _trim(part: str) -> str:
    return part.strip(" .")


def _utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding fits ``max_bytes`` (whole characters)."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")


def _bounded(name: str) -> str:
    if len(name.encode("utf-8")) <= ATTACHMENT_FILE_NAME_MAX_BYTES:
        return name
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem or len(extension) > ATTACHMENT_FILE_EXTENSION_MAX_CHARS:
        stem, extension = name, ""
    suffix = f".{extension}" if extension else ""
    room = ATTACHMENT_FILE_NAME_MAX_BYTES - len(suffix.encode("utf-8"))
    return _trim(_utf8_prefix(stem, room)) + suffix


def safe_name(name: str) -> str:
    """A file name with no path, no control/format characters, no quotes and no CR/LF.

    Unicode is kept (NFC). Leading and trailing dots and spaces go (no hidden files, no ``..``),
    whitespace runs become one space, the UTF-8 length is bounded with the extension kept, and
    the result is never empty. ``safe_name(safe_name(x)) == safe_name(x)``.
    """
    last = name.replace("\\", "/").rsplit("/", 1)[-1]
    # NFC again after cleaning: dropping a format character can join a base and its accent.
    cleaned = "".join(_clean_char(char) for char in unicodedata.normalize("NFC", last))
    cleaned = _trim(_SPACES.sub(" ", unicodedata.normalize("NFC", cleaned)))
    return _bounded(cleaned) or FALLBACK_NAME


def ascii_fallback(name: str) -> str:
    """An ASCII rendering for old clients: accents dropped, anything else non-ASCII becomes ``_``.

    ``%`` and ``\\`` are replaced too (RFC 6266 appendix D: some agents decode them)."""
    decomposed = unicodedata.normalize("NFKD", name)
    out = []
    for char in decomposed:
        if unicodedata.combining(char):
            continue
        if char.isascii() and char.isprintable() and char not in '"\\%':
            out.append(char)
        else:
            out.append("_")
    return "".join(out) or FALLBACK_NAME


def content_disposition_attachment(filename: str) -> str:
    """``attachment; filename="<ascii>"; filename*=UTF-8''<pct-encoded>`` (RFC 6266, RFC 8187).

    The name goes through :func:`safe_name` first; the ASCII fallback holds no quote, backslash,
    CR or LF and the extended value is percent-encoded, so no header injection is possible.
    """
    name = safe_name(filename)
    encoded = quote(name.encode("utf-8"), safe=_ATTR_CHAR_EXTRA)
    return f"attachment; filename=\"{ascii_fallback(name)}\"; filename*=UTF-8''{encoded}"
