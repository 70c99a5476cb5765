"""Idempotency keys, slot scopes and request fingerprints (pure).

The fingerprint is the SHA-256 of a *canonical* body, so that two requests meaning the same
thing match even when their bytes differ:

* JSON: keys sorted, no insignificant whitespace, numbers normalised (``1``, ``1.0`` and
  ``1e0`` are one number; ``1.50`` is ``1.5``).
* multipart/form-data: part by part (name, filename, content type, content), whatever the
  boundary.
* anything else: the raw bytes.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal, InvalidOperation
from typing import Any
from uuid import UUID

from craig.domain.constants import IDEMPOTENCY_KEY_MAX_LENGTH


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


# --- canonical forms ----------------------------------------------------------------------------


def _normalise_number(number: Decimal) -> Any:
    if not number.is_finite():
        raise ValueError("non-finite number")
    if number == number.to_integral_value():
        return _Raw(str(int(number)))
    text = format(number.normalize(), "f")
    return _Raw(text)


class _Raw(str):
    """A pre-rendered JSON number."""


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _canonical(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    if isinstance(value, Decimal):
        return _normalise_number(value)
    return value


def _dump(value: Any) -> str:
    if isinstance(value, _Raw):
        return str(value)
    if isinstance(value, dict):
        items = sorted(value.items())
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _dump(v) for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dump(item) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def canonical_json(body: bytes) -> bytes:
    """Canonical JSON bytes; raises ``ValueError`` when the body is not JSON."""
    try:
        parsed = json.loads(body, parse_float=Decimal, parse_int=Decimal)
    except (UnicodeDecodeError, json.JSONDecodeError, InvalidOperation, RecursionError) as error:
        raise ValueError(f"not JSON: {error}") from error
    return _dump(_canonical(parsed)).encode()


def _header_params(value: str) -> tuple[str, dict[str, str]]:
    main, *rest = value.split(";")
    params: dict[str, str] = {}
    for part in rest:
        if "=" in part:
            name, _, raw = part.strip().partition("=")
            params[name.strip().lower()] = raw.strip().strip('"')
    return main.strip().lower(), params


def multipart_parts(content_type: str, body: bytes) -> list[tuple[str, str, str, bytes]]:
    """(name, filename, content type, content) per part; raises ``ValueError`` when malformed."""
    _, params = _header_params(content_type)
    boundary = params.get("boundary")
    if not boundary:
        raise ValueError("multipart body without boundary")
    delimiter = b"--" + boundary.encode("latin-1")
    chunks = body.split(delimiter)
    if len(chunks) < 3:
        raise ValueError("multipart body without parts")
    parts = []
    for chunk in chunks[1:]:
        if chunk.startswith(b"--"):
            break
        chunk = chunk.removeprefix(b"\r\n").removesuffix(b"\r\n")
        head, sep, content = chunk.partition(b"\r\n\r\n")
        if not sep:
            raise ValueError("multipart part without header block")
        name = filename = ""
        part_type = "text/plain"
        for line in head.decode("utf-8", "replace").split("\r\n"):
            header, _, value = line.partition(":")
            header = header.strip().lower()
            if header == "content-disposition":
                _, disposition = _header_params(value)
                name = disposition.get("name", "")
                filename = disposition.get("filename", "")
            elif header == "content-type":
                part_type = value.strip().lower()
        parts.append((name, filename, part_type, content))
    return parts


def fingerprint(content_type: str | None, body: bytes) -> str:
    """SHA-256 (hex) of the canonical form of a request body."""
    media = (content_type or "").split(";")[0].strip().lower()
    digest = hashlib.sha256()
    canonical: bytes | None = None
    if media == "application/json" or media.endswith("+json"):
        try:
            canonical = b"json\x00" + canonical_json(body)
        except ValueError:
            canonical = None
    elif media == "multipart/form-data" and content_type:
        try:
            parts = multipart_parts(content_type, body)
        except ValueError:
            parts = None
        if parts is not None:
            digest.update(b"multipart\x00")
            for name, filename, part_type, content in parts:
                for field in (name.encode(), filename.encode(), part_type.encode()):
                    digest.update(len(field).to_bytes(8, "big") + field)
                digest.update(hashlib.sha256(content).digest())
            return digest.hexdigest()
    digest.update(canonical if canonical is not None else b"raw\x00" + body)
    return digest.hexdigest()
