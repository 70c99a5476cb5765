"""The Litestar application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

import structlog
from litestar import Litestar, Router
from litestar.config.cors import CORSConfig

from craig.entrypoints import operations, runtime
from craig.entrypoints.container import Container
from craig.entrypoints.http.auth import bearer_middleware
from craig.entrypoints.http.client_limits import ClientRateLimitMiddleware
from craig.entrypoints.http.dependencies import (
    DEPENDENCIES,
    client_address_dependency,
    cursors_dependency,
    unit_of_work_dependency,
)
from craig.entrypoints.http.dependency_order import resolve_in_turn
from craig.entrypoints.http.idempotency import IdempotencyMiddleware
from craig.entrypoints.http.openapi_config import openapi_config
from craig.entrypoints.http.origin import TRUSTED_PROXIES_STATE
from craig.entrypoints.http.problems import EXCEPTION_HANDLERS, ProblemRequest
from craig.entrypoints.http.query_guard import refuse_unknown_query_parameters
from craig.entrypoints.http.request_context import RequestContext, allowed_methods
from craig.entrypoints.http.routes import INTAKE_ROUTES, V1_ROUTES
from craig.entrypoints.http.system import system_router
from craig.entrypoints.http.use_cases import use_case_dependencies
from craig.entrypoints.settings import Settings, cors_origins
from craig.entrypoints.tokens import TokenVerifier

log = structlog.get_logger(__name__)

CORS_WILDCARD_WARNING = (
    "CORS origins set to wildcard '*' — acceptable for public intake (forms embedded on partner "
    "sites), but verify this matches the deployment intent."
)

Lifespan = Callable[[Litestar], AbstractAsyncContextManager[None]]


def _description(settings: Settings) -> str:
    hours = settings.idempotency.retention_hours
    return (
        "Craig: the case-worker API.\n\n"
        "Everything under `/v1` needs `Authorization: Bearer <JWT>`. This document and Swagger UI are "
        "public on purpose (Kerckhoffs): discoverable schemas do not weaken authentication.\n\n"
        "**Idempotency.** Every POST, PATCH and DELETE under `/v1` and `/intake` honours an `Idempotency-Key` "
        "header (1-255 printable ASCII characters). The first request runs; a retry with the same key "
        "and body replays the stored response byte for byte with `Idempotent-Replayed: true`; the same "
        "key with a different body answers 422; a concurrent duplicate waits for the first (up to "
        f"{settings.idempotency.wait_ceiling_seconds:g} s) and then answers 409 with `Retry-After`. "
        f"Keys expire {hours:g} hours after their last claim. A 5xx, or an answer carrying `Retry-After` "
        "(429, a transient 409), is not stored: retry with the same key.\n\n"
        "**Preconditions.** Cases, referrals, foster homes and placements send an `ETag`; their "
        "changes take it back as `If-Match` (412 `precondition-failed` with the current `ETag` when "
        "stale; 428 `precondition-required` where it is required).\n\n"
        "**Lists** answer keyset pages: `limit` (1-200, default 50) and the opaque `cursor` of the "
        'previous page\'s `next_cursor` (also in `Link: <...>; rel="next"`).\n\n'
        "Errors are RFC 9457 `application/problem+json` with one `Problem` schema; each problem's `type` "
        "is an absolute URI, `<origin>/problems/<code>`, whose page says what it means and what to do. "
        "Field errors come as `errors: [{pointer, code, message}]`, for 400 and 422 alike."
    )


def create_app(
    container: Container,
    *,
    manage_runtime: bool = True,
    lifespans: Sequence[Lifespan] = (),
    extra_v1_routes: Sequence[Any] = (),
) -> Litestar:
    """Build the app. ``manage_runtime`` starts/stops the profile's dependencies with the app;
    ``lifespans`` run inside that (the CLI passes the in-process workers)."""
    settings = container.settings()
    verifier = TokenVerifier(settings.auth)
    # Litestar deep-copies middleware; a provider held here would be copied with its singletons
    # (a second memory database!). Plain functions are copied by reference.
    idempotency = IdempotencyMiddleware(
        requests=lambda: container.idempotent_requests(),
        uow_factory=lambda: container.uow(),
        audit_log=lambda: container.audit_log(),
        max_body_bytes=settings.http.max_body_bytes,
    )
    # Per-client limits run before the idempotency layer: a refused request claims no slot.
    client_limits = ClientRateLimitMiddleware(
        limits={"intake": lambda: container.admit_intake_client()},
        trusted_proxies=settings.http.trusted_proxies,
    )
    v1 = Router(
        path="/v1",
        route_handlers=[*V1_ROUTES, *extra_v1_routes],
        middleware=[bearer_middleware(verifier), client_limits, idempotency],
        security=[{"BearerAuth": []}],
    )
    intake = Router(path="/intake", route_handlers=INTAKE_ROUTES, middleware=[client_limits, idempotency])

    origins = cors_origins(settings)
    if "*" in origins:
        log.warning(CORS_WILDCARD_WARNING)
    cors = (
        CORSConfig(
            allow_origins=origins,
            allow_credentials=settings.http.cors_allow_credentials,
            allow_headers=[
                "Authorization",
                "Content-Type",
                "Idempotency-Key",
                "If-Match",
                "If-None-Match",
                "X-Request-ID",
            ],
            expose_headers=[
                "Location",
                "Retry-After",
                "Idempotent-Replayed",
                "Idempotency-Body-Omitted",
                "X-Request-ID",
                "ETag",
                "Link",
            ],
        )
        if origins
        else None
    )

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if manage_runtime:
                await stack.enter_async_context(runtime.running(container))
            for extra in lifespans:
                await stack.enter_async_context(extra(app))
            stack.push_async_callback(verifier.aclose)
            verifier.start()
            yield

    app = Litestar(
        route_handlers=[
            system_router(
                runtime.health_checks(container),
                operations.metric_refreshers(container),
                serve_metrics=not settings.http.metrics_port,
            ),
            v1,
            intake,
        ],
        dependencies={
            **DEPENDENCIES,
            "uow": unit_of_work_dependency(lambda: container.uow()),
            "client_address": client_address_dependency(settings.http.trusted_proxies),
            "cursors": cursors_dependency(lambda: container.field_cipher()),
            **use_case_dependencies(container),
        },
        exception_handlers=EXCEPTION_HANDLERS,
        request_class=ProblemRequest,  # a body too deeply nested to decode is a 400
        before_request=refuse_unknown_query_parameters,
        cors_config=cors,
        request_max_body_size=settings.http.max_body_bytes,
        openapi_config=openapi_config(_description(settings)),
        lifespan=[lifespan],
        logging_config=None,
    )
    resolve_in_turn(app)
    # Outermost: the request's id and address, Craig's headers on every answer, each request
    # counted and logged once with the status actually sent (see the module).
    app.asgi_handler = RequestContext(app.asgi_handler, settings.http.trusted_proxies, allowed_methods(app.routes))
    app.state.attachment_max_bytes = settings.attachments.max_bytes
    app.state[TRUSTED_PROXIES_STATE] = settings.http.trusted_proxies
    return app
