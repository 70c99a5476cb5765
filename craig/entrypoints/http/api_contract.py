"""What a route declares about itself for the OpenAPI document, beyond what Litestar sees.

A route passes ``opt=answers(...)`` (merge it with other ``opt`` keys): the roles allowed to call
it, the problem codes its use case may answer, the conditional headers it honours, the response
headers it sends, and, for bodies Litestar cannot describe (a multipart upload, a binary download),
the OpenAPI fragment to use. Everything a route answers because of where it sits (401 under
``/v1``, the ``Idempotency-Key`` problems of every POST and PATCH, 404 for a path with ids, 400
for unreadable input, 429 of a per-client limit, 503 of a dependency) is added for every route
by :mod:`craig.entrypoints.http.openapi_document`; routes declare only what is theirs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from craig.domain.access import Role

#: Route ``opt`` key holding the :class:`Contract`.
OPT_KEY = "api_contract"

ANY_ROLE: tuple[Role, ...] = tuple(Role)
SUPERVISORS: tuple[Role, ...] = (Role.SUPERVISOR, Role.ADMIN)


@attrs.frozen(kw_only=True)
class Contract:
    #: Who may call the route; fewer than every role adds the ``forbidden`` problem.
    roles: tuple[Role, ...] = ANY_ROLE
    #: Problem codes the route's use case answers (see the registry in ``problem_types``).
    problems: tuple[str, ...] = ()
    #: ``If-Match`` honoured (412 ``precondition-failed`` when stale); ``if_match_required``: 428 without it.
    if_match: bool = False
    if_match_required: bool = False
    #: ``If-None-Match`` honoured on a GET (304 when the ETag still matches).
    if_none_match: bool = False
    #: Response headers the success response carries (names from ``openapi_document.HEADERS``).
    headers: tuple[str, ...] = ()
    #: Response headers the success response carries only sometimes (``Link`` when there is a
    #: next page).
    optional_headers: tuple[str, ...] = ()
    #: An OpenAPI ``requestBody`` replacing the one Litestar derives (e.g. a multipart form).
    request_body: Mapping[str, Any] | None = None
    #: An OpenAPI ``content`` map replacing the success response's (e.g. a binary download).
    response_content: Mapping[str, Any] | None = None


def answers(
    *problems: str,
    roles: tuple[Role, ...] = ANY_ROLE,
    if_match: bool = False,
    if_match_required: bool = False,
    if_none_match: bool = False,
    headers: tuple[str, ...] = (),
    optional_headers: tuple[str, ...] = (),
    request_body: Mapping[str, Any] | None = None,
    response_content: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``opt`` for a route: ``@post(..., opt=answers("case-already-placed", roles=SUPERVISORS))``."""
    contract = Contract(
        roles=roles,
        problems=problems,
        if_match=if_match or if_match_required,
        if_match_required=if_match_required,
        if_none_match=if_none_match,
        headers=headers,
        optional_headers=optional_headers,
        request_body=request_body,
        response_content=response_content,
    )
    return {OPT_KEY: contract}


def contract_of(opt: Mapping[str, Any]) -> Contract:
    found = opt.get(OPT_KEY)
    return found if isinstance(found, Contract) else Contract()
