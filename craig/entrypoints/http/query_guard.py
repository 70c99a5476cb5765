"""Every route refuses a query parameter it does not declare: 400 ``unknown-parameter`` naming it,
and one it takes once given several times: 400 ``invalid-parameter`` naming it.

A typo (``?famly_name=Doe``) would otherwise be ignored silently and answer the unfiltered list.
One ``before_request`` hook for the whole app compares the query with the parameters the route
handler declares (its query parameters, by their query name), read from the handler's
signature, which Litestar keeps parsed. A malformed value of a declared parameter is Litestar's
own 400 ``invalid-request``, which names the parameter too. Routes that are not Craig's (the
OpenAPI document) are left alone; Craig's own pages (Swagger UI, the problem pages, the health
probes) are guarded like its API.
"""

from __future__ import annotations

import functools
from typing import Any

from litestar import Request
from litestar.handlers import HTTPRouteHandler
from litestar.params import BodyKwarg, CookieParameter, HeaderParameter, ParameterKwarg, PathParameter

from craig.domain.constants import ROUTE_HANDLERS_CACHED
from craig.entrypoints.http.problems import ProblemException

#: Handler parameters Litestar fills from the connection itself, never from the query.
_RESERVED = frozenset({"request", "socket", "scope", "state", "headers", "cookies", "query", "body", "data"})
_NOT_QUERY = (PathParameter, HeaderParameter, CookieParameter)


@functools.lru_cache(maxsize=ROUTE_HANDLERS_CACHED)  # one entry per route handler
def query_names(handler: HTTPRouteHandler) -> frozenset[str]:
    """The query parameters ``handler`` declares."""
    return frozenset(_query_fields(handler))


@functools.lru_cache(maxsize=ROUTE_HANDLERS_CACHED)
def repeatable_names(handler: HTTPRouteHandler) -> frozenset[str]:
    """Those of :func:`query_names` that take several values (a list): the only ones that may
    be given more than once."""
    return frozenset(name for name, field in _query_fields(handler).items() if _takes_a_list(field))


def _takes_a_list(field: Any) -> bool:
    """``list[str]``, and an optional one (``list[str] | None = None``, the usual filter)."""
    if field.is_non_string_collection:
        return True
    return bool(field.is_optional) and any(
        inner.is_non_string_collection for inner in field.inner_types if not inner.is_none_type
    )


def _query_fields(handler: HTTPRouteHandler) -> dict[str, Any]:
    """The query parameters ``handler`` declares, by their query name, with their field."""
    dependencies = set(handler.resolve_dependencies())
    names: dict[str, Any] = {}
    for name, field in handler.parsed_fn_signature.parameters.items():
        if name in _RESERVED or name in dependencies:
            continue
        kwarg = field.kwarg_definition
        if isinstance(kwarg, BodyKwarg):
            continue
        if isinstance(kwarg, ParameterKwarg):
            if kwarg.header or kwarg.cookie or isinstance(kwarg, _NOT_QUERY):
                continue
            names[kwarg.query or name] = field
        elif kwarg is None:
            names[name] = field
    return names


def _is_ours(handler: Any) -> bool:
    fn = getattr(handler, "fn", None)
    return str(getattr(fn, "__module__", "")).startswith("craig.")


async def refuse_unknown_query_parameters(request: Request[Any, Any, Any]) -> None:
    """The ``before_request`` hook."""
    handler = request.scope.get("route_handler")
    if not isinstance(handler, HTTPRouteHandler) or not _is_ours(handler) or not request.scope.get("query_string"):
        return
    declared = query_names(handler) - set(request.path_params)
    query = request.query_params
    for name in query:
        if name not in declared:
            allowed = ", ".join(sorted(declared)) or "none"
            raise ProblemException(
                400,
                "unknown-parameter",
                f"this route has no query parameter {name!r} (it takes: {allowed})",
                extra={"parameter": name},
            )
        given = len(query.getall(name))
        if given > 1 and name not in repeatable_names(handler):
            # Which one would count is an accident of the parser: a filter given twice
            # (?status=open&status=closed) would silently answer for one of them.
            raise ProblemException(
                400,
                "invalid-parameter",
                f"give the query parameter {name!r} once (it was given {given} times)",
                extra={"parameter": name},
            )
