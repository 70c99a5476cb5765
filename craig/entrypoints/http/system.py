"""Operational routes: liveness, readiness, metrics, Swagger UI and the problem pages (all public).

Swagger UI is served from the ``swagger-ui-py`` wheel, but only the four files its page loads:
the package also ships the Swagger Editor bundles and source maps, which are never served."""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import msgspec
import swagger_ui
from litestar import MediaType, Response, Router, get
from litestar.exceptions import NotFoundException
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath

from craig.domain.constants import READINESS_CHECK_TIMEOUT, READINESS_ERROR_MAX_CHARS
from craig.entrypoints import metrics
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
    DOWN = "down"


class ReadyState(enum.StrEnum):
    READY = "ready"
    UNAVAILABLE = "unavailable"


class DependencyStatus(msgspec.Struct, omit_defaults=True):
    status: DependencyState
    #: Why it is down (at most 300 characters); absent when up.
    error: str | None = None


class Readiness(msgspec.Struct):
    status: ReadyState
    dependencies: dict[str, DependencyStatus]


async def _check(check: HealthCheck) -> str | None:
    try:
        await asyncio.wait_for(check(), READINESS_CHECK_TIMEOUT.total_seconds())
    except Exception as error:
        return f"{type(error).__name__}: {error}"[:READINESS_ERROR_MAX_CHARS]
    return None


def system_router(checks: Mapping[str, HealthCheck], refreshers: Sequence[metrics.Refresher]) -> Router:
    @get("/health/live", tags=["operations"], summary="Liveness", operation_id="getLiveness")
    async def live() -> Liveness:
        """Public. The process is up (nothing else is checked)."""
        return Liveness("ok")

    @get(
        "/health/ready",
        tags=["operations"],
        summary="Readiness",
        operation_id="getReadiness",
        responses={503: ResponseSpec(Readiness, description="A dependency is down: the same report")},
    )
    async def ready() -> Response[Readiness]:
        """Public. Every dependency's status; 503 with the same report when one is down."""
        names = list(checks)
        results = await asyncio.gather(*(_check(checks[name]) for name in names))
        report = {
            name: DependencyStatus(DependencyState.DOWN, error) if error else DependencyStatus(DependencyState.UP)
            for name, error in zip(names, results, strict=True)
        }
        healthy = all(error is None for error in results)
        return Response(
            Readiness(ReadyState.READY if healthy else ReadyState.UNAVAILABLE, report),
            status_code=200 if healthy else 503,
        )

    @get(
        "/metrics",
        media_type="text/plain; version=0.0.4; charset=utf-8",
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

    return Router(path="/", route_handlers=[live, ready, prometheus, swagger, swagger_asset, problem_page])
