"""Field errors: one shape for every problem that names the fields at fault.

``errors: [{"pointer": "/child/age", "code": "wrong-type", "message": "..."}]``: ``pointer`` is a
JSON Pointer (RFC 6901) into the request body (``""`` for the body as a whole), or the name of the
query, path or header parameter; ``code`` is a stable reason, ``message`` says it for people.
Litestar's request validation (400 ``invalid-request``) and the domain's rules (422) both answer
this shape.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

BODY_PARAMETER = "data"
_MISSING = re.compile(r"Object missing required field `([^`]+)`")
_UNKNOWN = re.compile(r"Object contains unknown field `([^`]+)`")
_SEGMENT = re.compile(r"\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|([^.\[\]]+)")
#: (message fragment, code), first match wins.
_CODES: tuple[tuple[str, str], ...] = (
    ("missing required field", "required"),
    ("contains unknown field", "unknown-field"),
    ("Invalid enum value", "not-allowed"),
    ("length", "length"),
    (">=", "out-of-range"),
    ("<=", "out-of-range"),
    (">", "out-of-range"),
    ("<", "out-of-range"),
    ("Invalid", "invalid-format"),
    ("Expected", "wrong-type"),
)


class FieldError(msgspec.Struct, frozen=True):
    """One field at fault."""

    pointer: str
    code: str
    message: str


def _escape(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")


def pointer_of(path: str) -> str:
    """``child.age`` -> ``/child/age``; ``rules[0].when`` -> ``/rules/0/when``; ``""`` -> ``""``."""
    parts = [index or quoted or name for index, quoted, name in _SEGMENT.findall(path)]
    return "".join(f"/{_escape(part)}" for part in parts)


def _code(message: str) -> str:
    return next((code for fragment, code in _CODES if fragment in message), "invalid")


def _from_litestar(error: Mapping[str, Any]) -> FieldError:
    message = str(error.get("message", "invalid"))
    key = str(error.get("key", ""))
    if error.get("source") not in (None, "body"):
        return FieldError(key, _code(message), message)
    path = "" if key == BODY_PARAMETER else key
    if message == f"'{BODY_PARAMETER}'":  # Litestar's KeyError when there is no body at all
        return FieldError("", "required", "a request body is required")
    named = _MISSING.search(message) or _UNKNOWN.search(message)
    if named:
        path = f"{path}.{named.group(1)}" if path else named.group(1)
    return FieldError(pointer_of(path), _code(message), message)


def from_validation(extra: object) -> list[FieldError]:
    """Litestar's ``ValidationException.extra`` (``[{"message", "key", "source"}]``) as field errors."""
    if not isinstance(extra, list):
        return []
    return [_from_litestar(error) for error in extra if isinstance(error, Mapping)]


def for_field(field: str, code: str, message: str, parameters: Iterable[str]) -> FieldError:
    """A domain rule's fault at ``field`` (a dotted path into the body, or a parameter's name)."""
    return FieldError(field if field in set(parameters) else pointer_of(field), code, message)
