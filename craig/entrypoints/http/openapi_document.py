"""Completes the document Litestar derives from the routes, for every route present and future.

Per operation: the problems it can answer (what its place implies, plus what the route declares
with :func:`craig.entrypoints.http.api_contract.answers`), each status as one
``application/problem+json`` response with the ``Problem`` schema listing its problem types; the
header parameters it reads (``Idempotency-Key`` on every POST and PATCH under ``/v1`` and
``/intake``, ``If-Match``/``If-None-Match`` where declared); the response headers it sends; and a
description that states its rules (roles, idempotency, conditional requests). Litestar's generic
400 body, which Craig never sends, is removed.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from craig.entrypoints.http import openapi_parts as parts
from craig.entrypoints.http.api_contract import ANY_ROLE, Contract
from craig.entrypoints.http.problem_types import BY_CODE

PROTECTED_PREFIX = "/v1/"
IDEMPOTENT_PREFIXES = ("/v1/", "/intake/")
WRITE_METHODS = frozenset({"post", "patch"})
#: Problems whose response carries Retry-After (always, for 429 and 503).
RETRY_CODES = frozenset({"idempotency-request-in-progress", "idempotency-claim-lost", "concurrent-update"})
IDEMPOTENCY_PROBLEMS = ("invalid-idempotency-key", "idempotency-key-reused", "idempotency-request-in-progress",
                        "idempotency-claim-lost")  # fmt: skip
WRITE_PROBLEMS = ("concurrent-update", "constraint-violation", "invalid-data")

#: Handler facts the document needs: (path, method) -> (contract, opt) of the handler.
Routes = Mapping[tuple[str, str], tuple[Contract, Mapping[str, Any]]]


def _problems(
    path: str, method: str, operation: Mapping[str, Any], contract: Contract, opt: Mapping[str, Any]
) -> list[str]:
    names = {p.get("name") for p in operation.get("parameters", []) if p.get("in") != "path"}
    codes: list[str] = []
    protected = path.startswith(PROTECTED_PREFIX)
    idempotent = method in WRITE_METHODS and path.startswith(IDEMPOTENT_PREFIXES)
    if names or "requestBody" in operation:
        codes.append("invalid-request")
    codes.append("unknown-parameter")  # every route of Craig's refuses a query parameter it does not take
    if any(p.get("in") == "query" for p in operation.get("parameters", [])):
        codes.append("invalid-parameter")  # a query parameter given twice (query_guard)
    if protected:
        codes.append("unauthorized")
    if set(contract.roles) != set(ANY_ROLE):
        codes.append("forbidden")
    if "{" in path:
        codes.append("not-found")
    if "requestBody" in operation:
        codes.append("body-too-large")
        codes.append("unsupported-media-type")  # a JSON body not sent as JSON, a file not as a form
    if "per_page" in names:
        codes.append("invalid-input")
    if idempotent:
        codes.extend(IDEMPOTENCY_PROBLEMS)
        codes.extend(WRITE_PROBLEMS)
        if opt.get("idempotency") == "required":
            codes.append("idempotency-key-required")
    if opt.get("client_rate_limit"):
        codes.append("rate-limited")
    if contract.if_match:
        codes.append("precondition-failed")
    if contract.if_match_required:
        codes.append("precondition-required")
    codes.extend(contract.problems)
    if path.startswith(IDEMPOTENT_PREFIXES):
        codes.append("dependency-unavailable")
    return list(dict.fromkeys(codes))


def _problem_response(status: int, codes: Iterable[str]) -> dict[str, Any]:
    codes = list(codes)
    lines = [f"- [`{code}`](/problems/{code}): {BY_CODE[code].title}" for code in codes]
    response: dict[str, Any] = {
        "description": "\n".join(lines),
        "content": {parts.PROBLEM_JSON: {"schema": {"$ref": parts.PROBLEM_REF}}},
    }
    if status in (429, 503) or RETRY_CODES & set(codes):
        response["headers"] = {"Retry-After": parts.header("Retry-After", required=status in (429, 503))}
    return response


def _rules(path: str, method: str, contract: Contract) -> list[str]:
    rules = []
    if path.startswith(PROTECTED_PREFIX):
        roles = ", ".join(str(role) for role in contract.roles)
        rules.append(f"**Roles:** {roles} (`Authorization: Bearer <JWT>`).")
    else:
        rules.append("**Public:** no token.")
    if method in WRITE_METHODS and path.startswith(IDEMPOTENT_PREFIXES):
        rules.append(
            "**Idempotency:** send an `Idempotency-Key` to retry safely: a retry with the same key and body "
            "replays the first response (`Idempotent-Replayed: true`); the same key with another body is 422."
        )
    if contract.if_match:
        needed = "required (428 without it)" if contract.if_match_required else "optional"
        rules.append(f"**Conditional:** `If-Match` with the `ETag` you read is {needed}; a stale one is 412.")
    if contract.if_none_match:
        rules.append("**Conditional:** `If-None-Match` with the current `ETag` answers 304 without a body.")
    return rules


def _complete_operation(
    path: str, method: str, operation: dict[str, Any], contract: Contract, opt: Mapping[str, Any]
) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    responses.pop("400", None)  # Litestar's ValidationException body: Craig answers problems
    if contract.request_body is not None:
        operation["requestBody"] = copy.deepcopy(dict(contract.request_body))
    idempotent = method in WRITE_METHODS and path.startswith(IDEMPOTENT_PREFIXES)
    parameters = operation.setdefault("parameters", [])
    added = []
    if idempotent:
        added.append(dict(parts.IDEMPOTENCY_KEY))
    if contract.if_match:
        added.append({**parts.IF_MATCH, "required": contract.if_match_required})
    if contract.if_none_match:
        added.append(dict(parts.IF_NONE_MATCH))
        responses["304"] = {"description": "Not modified: your `ETag` is still current."}
    # A handler that reads a header itself has Litestar document it: ours replaces that entry.
    names = {(p["in"], p["name"].lower()) for p in added}
    parameters[:] = [p for p in parameters if (p.get("in"), str(p.get("name", "")).lower()) not in names] + added
    if not parameters:
        del operation["parameters"]
    for status_text, response in responses.items():
        if status_text.startswith("2"):
            headers = response.setdefault("headers", {})
            headers.update({name: parts.header(name, required=True) for name in contract.headers})
            headers.update({name: parts.header(name, required=False) for name in contract.optional_headers})
            if contract.response_content is not None:
                response["content"] = copy.deepcopy(dict(contract.response_content))
    by_status: dict[int, list[str]] = {}
    for code in _problems(path, method, operation, contract, opt):
        by_status.setdefault(BY_CODE[code].status, []).append(code)
    for status, codes in sorted(by_status.items()):
        responses[str(status)] = _problem_response(status, codes)
    for response in responses.values():
        headers = response.setdefault("headers", {})
        headers.update({name: parts.header(name, required=True) for name in parts.EVERY_RESPONSE_HEADERS})
        if idempotent:
            headers.update({name: {"$ref": f"#/components/headers/{name}"} for name in parts.REPLAY_HEADERS})
        if not headers:
            del response["headers"]
    own = operation.get("description")
    operation["description"] = "\n\n".join([*([own] if own else []), *_rules(path, method, contract)])


def complete(document: Mapping[str, Any], routes: Routes) -> dict[str, Any]:
    """A completed copy of ``document`` (Litestar's, as a dict)."""
    done = copy.deepcopy(dict(document))
    schemas = done.setdefault("components", {}).setdefault("schemas", {})
    schemas["Problem"] = copy.deepcopy(dict(parts.PROBLEM_SCHEMA))
    schemas["FieldError"] = copy.deepcopy(dict(parts.FIELD_ERROR_SCHEMA))
    headers = done["components"].setdefault("headers", {})
    headers.update({name: parts.header(name, required=False) for name in parts.REPLAY_HEADERS})
    for path, item in done.get("paths", {}).items():
        for method, operation in item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            contract, opt = routes.get((path, method), (Contract(), {}))
            _complete_operation(path, method, operation, contract, opt)
    return done
