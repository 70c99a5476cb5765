"""Keyset pagination over HTTP: ``limit`` and ``cursor`` in, ``items``, ``next_cursor`` and a
``Link: <…>; rel="next"`` header out.

A cursor is bound to its list and filters (the request's path and every query parameter but
``limit`` and ``cursor``): following ``next_cursor`` with other filters is a 400, not a page of
another list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from litestar import Request

from craig.domain.constants import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from craig.domain.keyset import Keyset, SortKey
from craig.domain.pages import PageRequest
from craig.entrypoints.http.cursors import Cursors
from craig.entrypoints.http.problems import ProblemException

#: The query parameters of every keyset list.
PAGING = frozenset({"limit", "cursor"})


def _scope(request: Request[Any, Any, Any]) -> str:
    filters = sorted((k, v) for k, v in request.query_params.multi_items() if k not in PAGING)
    return f"{request.url.path}?{urlencode(filters)}"


def keyset_of(
    request: Request[Any, Any, Any], cursors: Cursors, limit: int | None, cursor: str | None, kinds: Sequence[type]
) -> Keyset:
    """The page the request asks for; 400 for a limit outside 1-200 or a bad cursor."""
    size = DEFAULT_PAGE_SIZE if limit is None else limit
    if not 1 <= size <= MAX_PAGE_SIZE:
        raise ProblemException(
            400,
            "invalid-parameter",
            f"limit must lie between 1 and {MAX_PAGE_SIZE}",
            extra={"parameter": "limit"},
        )
    after = cursors.decode(_scope(request), cursor, kinds) if cursor is not None else None
    return Keyset(limit=size, after=after)


def next_page(
    request: Request[Any, Any, Any], cursors: Cursors, after: SortKey | None
) -> tuple[str | None, dict[str, str]]:
    """``next_cursor`` and the ``Link`` header of the next page (none on the last page)."""
    if after is None:
        return None, {}
    cursor = cursors.encode(_scope(request), after)
    query = [(k, v) for k, v in request.query_params.multi_items() if k != "cursor"] + [("cursor", cursor)]
    return cursor, {"Link": f'<{request.url.path}?{urlencode(query)}>; rel="next"'}


def legacy_page(page: int | None, per_page: int | None, **keyset_parameters: object) -> PageRequest | None:
    """The old offset page when ``page`` or ``per_page`` is given (then no keyset parameter or
    filter may be), else None: the list answers a keyset page."""
    if page is None and per_page is None:
        return None
    mixed = sorted(name for name, value in keyset_parameters.items() if value is not None)
    if mixed:
        raise ProblemException(
            400,
            "invalid-parameter",
            f"page/per_page cannot be combined with {', '.join(mixed)}",
            extra={"parameter": mixed[0]},
        )
    return PageRequest(1 if page is None else page, DEFAULT_PAGE_SIZE if per_page is None else per_page)
