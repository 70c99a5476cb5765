"""Operational routes: liveness, readiness, dependencies, metrics, Swagger UI and the problem pages (all public).

Swagger UI is served from the ``swagger-ui-py`` wheel, but only the four files its page loads:
the package also ships the Swagger Editor bundles and source maps, which are never served."""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs
import msgspec
import swagger_ui
from litestar import MediaType, Response, Router, get
from litestar.exceptions import NotFoundException
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath

from craig.domain.constants import READINESS_CHECK_TIMEOUT, READINESS_ERROR_MAX_CHARS
from craig.entrypoints import metrics
from craig.entrypoints.deadline import within
from craig.entrypoints.http.problem_pages import problem_page

HealthCheck = Callable[[], Awaitable[None]]
SWAGGER_STATIC = Path(swagger_ui.__file__).parent / "static"
#: The only files of SWAGGER_STATIC served, with their media types: what _SWAGGER_PAGE loads.
SWAGGER_ASSETS = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
    "favicon-32x32.png": "image/png",
}

_SWAGGER_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Craig API</title>
  <link rel="stylesheet" href="/swagger-ui/static/swagger-ui.css">
  <link rel="icon" type="image/png" href="/swagger-ui/static/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/swagger-ui/static/swagger-ui-bundle.js"></script>
  <script src="/swagger-ui/static/swagger-ui-standalone-preset.js"></script>
  <script>
    window.ui = SwaggerUIBundle({
      url: "/api-doc/openapi.json",
      dom_id: "#swagger-ui",
      presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
      layout: "StandaloneLayout",
      persistAuthorization: true
    });
  </script>
</body>
</html>
"""


class Liveness(msgspec.Struct):
    status: Literal["ok"]


class DependencyState(enum.StrEnum):
    UP = "up"
    #: Not answering, but the process serves without it (RabbitMQ, the object store).
    DEGRADED = "degraded"
    #: Not answering, and the process cannot serve without it (PostgreSQL, or its schema).
    DOWN = "down"


class ReadyState(enum.StrEnum):
    READY = "ready"
    DEGRADED = "degraded"
    UNAVAILABLE = "unavailable"


class DependencyStatus(msgspec.Struct, omit_defaults=True):
    status: DependencyState
    #: Why it is not up (at most 300 characters); absent when up.
    error: str | None = None


class Readiness(msgspec.Struct):
    status: ReadyState
    dependencies: dict[str, DependencyStatus]


class DependencyReport(msgspec.Struct, omit_defaults=True):
    status: DependencyState
    #: Whether the process is unready without it (only the database).
    required: bool
    #: How long its check took, in seconds (at most the check's timeout).
    seconds: float
    error: str | None = None


class Dependencies(msgspec.Struct):
    status: ReadyState
    dependencies: dict[str, DependencyReport]


#: The dependencies a process cannot serve without; any other one that is down is ``degraded``.
REQUIRED = frozenset({"database"})


@attrs.frozen
class _Checked:
    name: str
    error: str | None
    seconds: float

    @property
    def required(self) -> bool:
        return self.name in REQUIRED

    @property
    def state(self) -> DependencyState:
        if self.error is None:
            return DependencyState.UP
        return DependencyState.DOWN if self.required else DependencyState.DEGRADED


async def _check(name: str, check: HealthCheck) -> _Checked:
    started = time.perf_counter()
    error: str | None = None
    try:
        await within(READINESS_CHECK_TIMEOUT.total_seconds(), check())
    except TimeoutError:
        error = f"no answer within {READINESS_CHECK_TIMEOUT.total_seconds():g} s"
    except Exception as failure:
        error = f"{type(failure).__name__}: {failure}"[:READINESS_ERROR_MAX_CHARS]
    return _Checked(name, error, round(time.perf_counter() - started, 4))


async def check_all(checks: Mapping[str, HealthCheck]) -> tuple[ReadyState, list[_Checked]]:
    """Every check, side by side (a hung dependency costs at most the timeout)."""
    results = list(await asyncio.gather(*(_check(name, check) for name, check in checks.items())))
    if any(result.state is DependencyState.DOWN for result in results):
        return ReadyState.UNAVAILABLE, results
    if any(result.state is DependencyState.DEGRADED for result in results):
        return ReadyState.DEGRADED, results
    return ReadyState.READY, results


def system_router(
    checks: Mapping[str, HealthCheck], refreshers: Sequence[metrics.Refresher], *, serve_metrics: bool = True
) -> Router:
    """``serve_metrics`` False: ``/metrics`` is served on a port of its own, not here."""

    @get("/health/live", tags=["operations"], summary="Liveness", operation_id="getLiveness")
    async def live() -> Liveness:
        """Public. The process is up (nothing else is checked)."""
        return Liveness("ok")

    @get(
        "/health/ready",
        tags=["operations"],
        summary="Readiness",
        operation_id="getReadiness",
        responses={503: ResponseSpec(Readiness, description="The database is down or not migrated: the same report")},
    )
    async def ready() -> Response[Readiness]:
        """Public. Whether this process can serve requests: 200 when PostgreSQL answers and its
        schema is at this Craig's head revision, 503 with the same report otherwise. RabbitMQ or
        the object store not answering shows as ``degraded`` (status ``degraded``, still 200)."""
        state, results = await check_all(checks)
        report = {result.name: DependencyStatus(result.state, result.error) for result in results}
        return Response(Readiness(state, report), status_code=503 if state is ReadyState.UNAVAILABLE else 200)

    @get(
        "/health/dependencies",
        tags=["operations"],
        summary="Dependencies",
        operation_id="getDependencies",
    )
    async def dependencies() -> Dependencies:
        """Public. Every dependency: ``ok``, ``degraded`` (down, but the process serves without it)
        or ``down`` (required), with the error and how long its check took. Always 200: it is a
        report, not a probe (``/health/ready`` is the probe)."""
        state, results = await check_all(checks)
        return Dependencies(
            state,
            {
                result.name: DependencyReport(result.state, result.required, result.seconds, result.error)
                for result in results
            },
        )

    @get(
        "/metrics",
        media_type="text/plain; version=0.0.4",  # Litestar adds "; charset=utf-8" to every text/ type
        tags=["operations"],
        summary="Prometheus metrics",
        operation_id="getMetrics",
    )
    async def prometheus() -> bytes:
        """Public. Prometheus text exposition."""
        return await metrics.render(refreshers)

    @get("/swagger-ui", media_type=MediaType.HTML, include_in_schema=False)
    async def swagger() -> str:
        return _SWAGGER_PAGE

    assets = {name: (SWAGGER_STATIC / name).read_bytes() for name in SWAGGER_ASSETS}

    @get("/swagger-ui/static/{name:str}", include_in_schema=False)
    async def swagger_asset(name: FromPath[str]) -> Response[bytes]:
        content = assets.get(name)
        if content is None:
            raise NotFoundException()
        return Response(content, media_type=SWAGGER_ASSETS[name], headers={"Cache-Control": "public, max-age=86400"})

    handlers: list[Any] = [live, ready, dependencies, swagger, swagger_asset, problem_page]
    if serve_metrics:
        handlers.append(prometheus)
    return Router(path="/", route_handlers=handlers)
