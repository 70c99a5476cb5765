"""Idempotency keys, slot scopes and request fingerprints (pure).

The fingerprint is the SHA-256 of a *canonical* body, so that two requests meaning the same
thing match even when their bytes differ:

* JSON: keys sorted, no insignificant whitespace, numbers normalised (``1``, ``1.0``, ``1e0``
  and ``10E-1`` are one number; ``1.50`` is ``1.5``; ``-0`` is ``0``). Numbers are normalised
  as text (sign, digits, exponent), never converted to a number, so the work is linear in the
  body's size whatever the numbers: ``1e2000000`` costs what ``1e2`` costs.
* multipart/form-data: part by part (name, filename, content type, content, and any other
  header or parameter), whatever the boundary. Part headers are read by a tokenizer that knows
  quoted strings (a ``;`` or an escaped quote inside one) and ``filename*=UTF-8''...`` values.
* anything else, or a body that cannot be read as its type (e.g. JSON that is not UTF-8, or
  starts with a byte order mark): the raw bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any
from urllib.parse import unquote_to_bytes
from uuid import UUID

from craig.domain.constants import (
    FINGERPRINT_JSON_MAX_DEPTH,
    FINGERPRINT_MULTIPART_MAX_HEADER_BYTES,
    FINGERPRINT_MULTIPART_MAX_PARTS,
    FINGERPRINT_NUMBER_MAX_EXPONENT_DIGITS,
    FINGERPRINT_NUMBER_MAX_PADDING_ZEROS,
    IDEMPOTENCY_KEY_MAX_LENGTH,
)


class InvalidIdempotencyKey(ValueError):
    pass


def validate_key(value: str) -> str:
    """1 to 255 printable ASCII characters (space through tilde)."""
    if not 1 <= len(value) <= IDEMPOTENCY_KEY_MAX_LENGTH:
        raise InvalidIdempotencyKey(
            f"Idempotency-Key must be 1 to {IDEMPOTENCY_KEY_MAX_LENGTH} characters long, got {len(value)}"
        )
    if any(not (0x20 <= ord(ch) <= 0x7E) for ch in value):
        raise InvalidIdempotencyKey("Idempotency-Key must contain printable ASCII characters only")
    return value


def cache_key(user_sub: UUID | None, method: str, path: str, key: str) -> str:
    """The slot's primary key. Anonymous callers share one scope per route."""
    scope = f"user:{user_sub}" if user_sub is not None else "anonymous"
    material = "\x1f".join((scope, method.upper(), path, key))
    return hashlib.sha256(material.encode()).hexdigest()


# --- JSON ----------------------------------------------------------------------------------------

_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def canonical_number(text: str) -> str:
    """The canonical text of a JSON number, computed on its text alone.

    Equal values give equal texts: the significant digits without leading or trailing zeros,
    placed in plain decimal form (``1500``, ``1.5``, ``0.001``) unless that would take more
    than ``FINGERPRINT_NUMBER_MAX_PADDING_ZEROS`` zeros, then in exponent form
    (``1e400``, ``-1.25e-30``). Zero has no sign. The result is at most that many characters
    longer than ``text``. Raises ``ValueError`` for text that is not a JSON number or whose
    exponent has more than ``FINGERPRINT_NUMBER_MAX_EXPONENT_DIGITS`` digits.
    """
    if _NUMBER.fullmatch(text) is None:
        raise ValueError(f"not a JSON number: {text[:40]!r}")
    return _normalise(text)


def _normalise(text: str) -> str:
    negative = text.startswith("-")
    mantissa, _, exponent_text = text.removeprefix("-").lower().partition("e")
    integer, _, fraction = mantissa.partition(".")
    exponent = _exponent(exponent_text)
    digits = (integer + fraction).lstrip("0")
    if not digits:
        return "0"
    significant = digits.rstrip("0")
    exponent += len(digits) - len(significant) - len(fraction)
    return ("-" if negative else "") + _render(significant, exponent)


def _exponent(text: str) -> int:
    magnitude = text.lstrip("+-").lstrip("0")
    if len(magnitude) > FINGERPRINT_NUMBER_MAX_EXPONENT_DIGITS:
        raise ValueError("the number's exponent is out of range")
    value = int(magnitude or "0")
    return -value if text.startswith("-") else value


def _render(digits: str, exponent: int) -> str:
    """``digits`` (no leading or trailing zeros) times ten to the ``exponent``."""
    count = len(digits)
    point = count + exponent  # where the decimal point falls among the digits
    padding = exponent if exponent >= 0 else max(0, 1 - point)
    if padding > FINGERPRINT_NUMBER_MAX_PADDING_ZEROS:
        fraction = f".{digits[1:]}" if count > 1 else ""
        return f"{digits[0]}{fraction}e{point - 1}"
    if exponent >= 0:
        return digits + "0" * exponent
    if point > 0:
        return f"{digits[:point]}.{digits[point:]}"
    return "0." + "0" * -point + digits


class _Raw(str):
    """A pre-rendered JSON number."""


def _parse_float(text: str) -> _Raw:
    return _Raw(_normalise(text))  # the JSON scanner only hands over well-formed numbers


def _parse_int(text: str) -> _Raw:
    """The common case, an integer (no leading zeros in JSON), is its own canonical form."""
    if text != "-0" and len(text) - len(text.rstrip("0")) <= FINGERPRINT_NUMBER_MAX_PADDING_ZEROS:
        return _Raw(text)
    return _Raw(_normalise(text))


def _dump(value: Any, out: list[str], depth: int = 0) -> None:
    """Append the canonical text of ``value`` to ``out`` (one list: no copying per level)."""
    if isinstance(value, _Raw):
        out.append(value)
    elif isinstance(value, dict | list):
        if depth >= FINGERPRINT_JSON_MAX_DEPTH:
            raise ValueError(f"JSON nested deeper than {FINGERPRINT_JSON_MAX_DEPTH}")
        if isinstance(value, dict):
            out.append("{")
            for index, (key, item) in enumerate(sorted(value.items())):
                out.append(("," if index else "") + json.dumps(key, ensure_ascii=False) + ":")
                _dump(item, out, depth + 1)
            out.append("}")
        else:
            out.append("[")
            for index, item in enumerate(value):
                if index:
                    out.append(",")
                _dump(item, out, depth + 1)
            out.append("]")
    else:
        out.append(json.dumps(value, ensure_ascii=False))


def canonical_json(body: bytes) -> bytes:
    """Canonical JSON bytes; raises ``ValueError`` when the body is not JSON (or nests deeper
    than ``FINGERPRINT_JSON_MAX_DEPTH``, or holds a number :func:`canonical_number` refuses).

    JSON here is what the app reads: UTF-8 without a byte order mark (RFC 8259). ``json.loads``
    would also take bytes in UTF-16 or UTF-32, or behind a UTF-8 BOM, which the app refuses; such
    a body read as JSON would share its fingerprint with its UTF-8 form, so that the UTF-8 retry
    of a refused request would replay the refusal. Decoded strictly, it is raw bytes instead."""
    try:
        # A str starting with a BOM is refused by json.loads; strict UTF-8 refuses surrogates.
        parsed = json.loads(body.decode("utf-8"), parse_float=_parse_float, parse_int=_parse_int)
        out: list[str] = []
        _dump(parsed, out)
        return "".join(out).encode()
    except (UnicodeError, json.JSONDecodeError, RecursionError) as error:
        raise ValueError(f"not JSON: {error}") from error


# --- multipart -----------------------------------------------------------------------------------

# Possessive quantifiers: a failed match never backtracks, so every match is linear.
_PARAMETER = re.compile(
    r"""[ \t;]*+(?P<name>[^=;\s"]++)[ \t]*+=[ \t]*+
        (?:"(?P<quoted>[^"\\]*+(?:\\.[^"\\]*+)*+)"[ \t]*+|(?P<token>[^;"]*+))
        (?:;|$)""",
    re.VERBOSE | re.DOTALL,
)
_QUOTED_PAIR = re.compile(r"\\(.)", re.DOTALL)
_ONLY_SEPARATORS_LEFT = re.compile(r"[ \t;]*+$")


def header_params(value: str) -> tuple[str, list[tuple[str, str]]]:
    """``main; name=value; name="quoted"`` as (main, [(name, value), ...]), in order.

    A tokenizer, linear in the value's length: a quoted string may hold ``;`` and backslash
    escapes (RFC 9110 ``quoted-pair``); a ``name*`` parameter is an RFC 8187 ``ext-value``
    (``UTF-8'en'%E2%82%AC``), decoded, and keeps its ``*`` so that it stays apart from ``name``.
    Names are lower-cased. Raises ``ValueError`` when malformed.
    """
    end = value.find(";")
    if end < 0:
        return value.strip().lower(), []
    params: list[tuple[str, str]] = []
    position = end + 1
    while not _ONLY_SEPARATORS_LEFT.match(value, position):
        found = _PARAMETER.match(value, position)
        if found is None:
            raise ValueError(f"malformed header parameter at character {position}")
        position = found.end()
        name, quoted = found["name"].lower(), found["quoted"]
        raw = _QUOTED_PAIR.sub(r"\1", quoted) if quoted is not None else found["token"].strip(" \t")
        params.append((name, _ext_value(raw) if name.endswith("*") else raw))
    return value[:end].strip().lower(), params


#: The charsets RFC 8187 requires; any other one (some codecs are slow) is refused.
_EXT_CHARSETS = ("utf-8", "iso-8859-1")


def _ext_value(raw: str) -> str:
    charset, quote, rest = raw.partition("'")
    _language, quote_two, encoded = rest.partition("'")
    if not (quote and quote_two):
        raise ValueError("an ext-value is charset'language'percent-encoded")
    if charset.strip().lower() not in _EXT_CHARSETS:
        raise ValueError(f"an ext-value in charset {charset[:40]!r}")
    return unquote_to_bytes(encoded).decode(charset.strip().lower())


#: One part: (name, filename, content type, content, other headers and parameters, sorted).
Part = tuple[str, str, str, bytes, tuple[tuple[str, str], ...]]


def multipart_parts(content_type: str, body: bytes) -> list[Part]:
    """The parts of a multipart body; raises ``ValueError`` when malformed, or when it has more
    than ``FINGERPRINT_MULTIPART_MAX_PARTS`` parts or ``FINGERPRINT_MULTIPART_MAX_HEADER_BYTES``
    of part headers (what a form never needs, and what would cost the tokenizer the most)."""
    _, params = header_params(content_type)
    boundary = dict(params).get("boundary")
    if not boundary:
        raise ValueError("multipart body without boundary")
    # As RFC 2046 and the form parser read it: the first boundary opens the body or follows a
    # CRLF (after a preamble), every later one follows a CRLF, which belongs to it, and a part's
    # content runs up to there. Splitting on the bare boundary anywhere once gave one
    # fingerprint to two bodies the parser read as different forms: a file replayed as stored
    # that never was. Whatever is not so (padding after a boundary, no closing one) is not read
    # here: the body is then fingerprinted as raw bytes.
    opening = b"--" + boundary.encode("utf-8", "surrogateescape")
    delimiter = b"\r\n" + opening
    if body.startswith(opening):
        rest = body[len(opening) :]
    else:
        first = body.find(delimiter)
        if first < 0:
            raise ValueError("multipart body without a boundary")
        rest = body[first + len(delimiter) :]
    chunks = rest.split(delimiter, FINGERPRINT_MULTIPART_MAX_PARTS + 1)
    if len(chunks) < 2 or not chunks[-1].startswith(b"--"):
        raise ValueError("multipart body without parts, or without its closing boundary")
    parts: list[Part] = []
    header_bytes = 0
    for chunk in chunks:
        if chunk.startswith(b"--"):
            break
        if len(parts) == FINGERPRINT_MULTIPART_MAX_PARTS:
            raise ValueError(f"more than {FINGERPRINT_MULTIPART_MAX_PARTS} parts")
        if not chunk.startswith(b"\r\n"):
            raise ValueError("a multipart boundary not followed by its line break")
        head, sep, content = chunk[2:].partition(b"\r\n\r\n")
        if not sep:
            raise ValueError("multipart part without header block")
        header_bytes += len(head)
        if header_bytes > FINGERPRINT_MULTIPART_MAX_HEADER_BYTES:
            raise ValueError(f"more than {FINGERPRINT_MULTIPART_MAX_HEADER_BYTES} bytes of part headers")
        parts.append(_part(head, content))
    return parts


def _part(head: bytes, content: bytes) -> Part:
    # surrogateescape: distinct bytes stay distinct characters, valid UTF-8 reads as itself.
    headers = []
    for line in head.decode("utf-8", "surrogateescape").split("\r\n"):
        header, colon, value = line.partition(":")
        if not colon:
            raise ValueError("multipart header line without a colon")
        headers.append((header.strip().lower(), value))
    last = {header: index for index, (header, _) in enumerate(headers)}  # the last one wins
    disposition, content_type = last.get("content-disposition"), last.get("content-type")
    others = [(h, v.strip()) for i, (h, v) in enumerate(headers) if i not in (disposition, content_type)]
    kind, params = header_params(headers[disposition][1]) if disposition is not None else ("", [])
    chosen = {param: index for index, (param, _) in enumerate(params) if param in ("name", "filename")}
    others += [(f"content-disposition;{p}", v) for i, (p, v) in enumerate(params) if i not in chosen.values()]
    if kind != "form-data":
        others.append(("content-disposition", kind))
    name, filename = (params[chosen[p]][1] if p in chosen else "" for p in ("name", "filename"))
    part_type = headers[content_type][1].strip().lower() if content_type is not None else "text/plain"
    return name, filename, part_type, content, tuple(sorted(others))


#: Never a field length (those are below 2**63): announces a part's extra fields.
_EXTRAS = b"\xff" * 8


def _field(text: str) -> bytes:
    data = text.encode("utf-8", "surrogateescape")
    return len(data).to_bytes(8, "big") + data


def is_json_media_type(media_type: str) -> bool:
    """``application/json`` or a structured ``+json`` type (``application/merge-patch+json``):
    what the API reads as JSON, and so what is fingerprinted as JSON."""
    media_type = media_type.strip().lower()
    return media_type == "application/json" or (media_type.startswith("application/") and media_type.endswith("+json"))


def fingerprint(content_type: str | None, body: bytes, query: bytes = b"") -> str:
    """SHA-256 (hex) of the canonical form of a request body, and of its query string when it has
    one (a request without one keeps the fingerprint it always had)."""
    media = (content_type or "").split(";")[0].strip().lower()
    digest = hashlib.sha256()
    if query:
        digest.update(b"query\x00" + _field(query.decode("latin-1")))
    if is_json_media_type(media):
        try:
            digest.update(b"json\x00" + canonical_json(body))
            return digest.hexdigest()
        except ValueError:
            pass
    elif media == "multipart/form-data" and content_type:
        try:
            records = [_multipart_record(part) for part in multipart_parts(content_type, body)]
            digest.update(b"multipart\x00" + b"".join(records))
            return digest.hexdigest()
        except ValueError:
            pass
    digest.update(b"raw\x00" + body)
    return digest.hexdigest()


def _multipart_record(part: Part) -> bytes:
    name, filename, part_type, content, others = part
    record = _field(name) + _field(filename) + _field(part_type) + hashlib.sha256(content).digest()
    if others:
        record += _EXTRAS + len(others).to_bytes(8, "big") + b"".join(_field(k) + _field(v) for k, v in others)
    return record
