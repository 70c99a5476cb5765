"""Building blocks of the OpenAPI document: the Problem schema, the headers Craig reads and sends.

Headers are written out in full where used (not ``$ref``'d): ``required`` belongs to each use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from craig.domain.constants import IDEMPOTENCY_KEY_MAX_LENGTH

PROBLEM_JSON = "application/problem+json"
PROBLEM_REF = "#/components/schemas/Problem"

FIELD_ERROR_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "title": "FieldError",
    "description": "One input at fault. The same shape for 400 (unreadable input) and 422 (a rule refused it).",
    "required": ["pointer", "code", "message"],
    "properties": {
        "pointer": {
            "type": "string",
            "description": 'A JSON Pointer (RFC 6901) into the request body (`""`: the whole body), '
            "or the name of the query, path or header parameter at fault.",
            "examples": ["/child/age", "per_page"],
        },
        "code": {
            "type": "string",
            "description": "Why, for programs: `required`, `unknown-field`, `wrong-type`, `invalid-format`, "
            "`out-of-range`, `length`, `not-allowed`, `malformed`, `invalid`, or the problem's code "
            "for a business rule.",
            "examples": ["wrong-type"],
        },
        "message": {"type": "string", "description": "Why, for people.", "examples": ["Expected `int`, got `str`"]},
    },
}

PROBLEM_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "title": "Problem",
    "description": "An RFC 9457 problem. `type` resolves to a page saying what the problem means and what to "
    "do. Some problems add members of their own (named in their page), e.g. `incident`, `max_bytes`, "
    "`allowed_types`, `upstream_path`.",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {
            "type": "string",
            "format": "uri",
            "description": "Absolute URI: `<origin>/problems/<code>`.",
            "examples": ["https://craig.example/problems/not-found"],
        },
        "title": {"type": "string", "description": "The same for every occurrence of the type."},
        "status": {"type": "integer", "minimum": 400, "maximum": 599},
        "detail": {"type": "string", "description": "This occurrence, for people."},
        "instance": {"type": "string", "description": "The request's path."},
        "errors": {"type": "array", "items": {"$ref": "#/components/schemas/FieldError"}},
        "incident": {"type": "string", "description": "500 only: quote it when reporting; the log line has it."},
    },
    "additionalProperties": True,
    "examples": [
        {
            "type": "https://craig.example/problems/invalid-request",
            "title": "The request is malformed",
            "status": 400,
            "detail": "Validation failed for POST /intake/referrals",
            "instance": "/intake/referrals",
            "errors": [{"pointer": "/child/age", "code": "wrong-type", "message": "Expected `int`, got `str`"}],
        }
    ],
}


def _header(description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"description": description, "schema": dict(schema)}


#: Response headers, by name. ``header(name, required=...)`` makes a Header Object of one.
HEADERS: Final[Mapping[str, Mapping[str, Any]]] = {
    "Location": _header("The URL of the resource the request created.", {"type": "string"}),
    "ETag": _header("The version of the resource: send it in `If-Match` to change it.", {"type": "string"}),
    "Link": _header('RFC 8288 links to other pages (`rel="next"`).', {"type": "string"}),
    "Retry-After": _header("Seconds to wait before retrying.", {"type": "string", "pattern": "^[0-9]+$"}),
    "Idempotent-Replayed": _header(
        "`true` when this is the stored response of an earlier request with the same `Idempotency-Key`.",
        {"type": "string", "enum": ["true"]},
    ),
    "Idempotency-Body-Omitted": _header(
        "`true` on a replay whose original body was too large to store: the body is empty.",
        {"type": "string", "enum": ["true"]},
    ),
    "X-Request-ID": _header(
        "The request's id: the caller's `X-Request-ID` when sane, else a new one. Log lines carry it.",
        {"type": "string"},
    ),
    "Content-Disposition": _header(
        "`attachment` with the file's name (`filename` and RFC 5987 `filename*`).", {"type": "string"}
    ),
}

#: Headers every response carries, errors included (none but the security headers yet,
#: which the document leaves out). A middleware that adds one to every response names it here.
EVERY_RESPONSE_HEADERS: tuple[str, ...] = ("X-Request-ID",)
#: What a replayed response of the idempotency layer adds (any status it stored).
REPLAY_HEADERS = ("Idempotent-Replayed", "Idempotency-Body-Omitted")


def header(name: str, *, required: bool) -> dict[str, Any]:
    return {**HEADERS[name], "required": required}


def header_parameter(name: str, description: str, *, required: bool = False, **schema: Any) -> dict[str, Any]:
    return {"name": name, "in": "header", "required": required, "description": description, "schema": schema}


IDEMPOTENCY_KEY = header_parameter(
    "Idempotency-Key",
    "Makes the request safe to retry: the first request with a key runs, a retry with the same key and body "
    "replays its stored response (with `Idempotent-Replayed: true`). 1-255 printable ASCII characters, e.g. "
    "a random UUID.",
    type="string",
    minLength=1,
    maxLength=IDEMPOTENCY_KEY_MAX_LENGTH,
    pattern="^[\\x20-\\x7e]+$",
)
IF_MATCH = header_parameter(
    "If-Match", "The `ETag` of the version you read: the change applies only to that version (else 412).", type="string"
)
IF_NONE_MATCH = header_parameter(
    "If-None-Match", "The `ETag` you hold: 304 without a body while it is still current.", type="string"
)
