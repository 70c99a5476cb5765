"""OpenAPI entries of the problems a route answers: one typed schema, a description per status."""

from __future__ import annotations

import msgspec
from litestar.openapi.datastructures import ResponseSpec

from craig.entrypoints.http.problems import PROBLEM_JSON


class Problem(msgspec.Struct):
    """RFC 9457 problem details; some problems add members (``current_etag``, ``screened_by``…)."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None


_MEANING = {
    304: "Not modified: If-None-Match names the current ETag",
    400: "A malformed or unknown parameter, or a bad cursor",
    403: "Your role may not do this",
    404: "Unknown, or not visible to you",
    409: "Conflicts with the current state (the problem type says which)",
    412: "Stale If-Match: the resource changed since you read it (the current ETag is in ETag)",
    422: "A value breaks a rule",
    428: "If-Match is required",
}


def problems(*statuses: int) -> dict[int, ResponseSpec]:
    """``responses=`` of a route: the problem statuses it may answer besides 400."""
    specs = {
        status: ResponseSpec(Problem, description=_MEANING[status], media_type=PROBLEM_JSON, generate_examples=False)
        for status in (400, *statuses)
    }
    if 304 in statuses:
        specs[304] = ResponseSpec(None, description=_MEANING[304])
    return specs
