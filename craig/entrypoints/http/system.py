"""Operational routes: liveness, readiness, metrics, Swagger UI (all public)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import swagger_ui
from litestar import MediaType, Response, Router, get
from litestar.static_files import create_static_files_router

from craig.domain.constants import READINESS_CHECK_TIMEOUT, READINESS_ERROR_MAX_CHARS
from craig.entrypoints import metrics

HealthCheck = Callable[[], Awaitable[None]]
SWAGGER_STATIC = Path(swagger_ui.__file__).parent / "static"

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


async def _check(check: HealthCheck) -> str | None:
    try:
        await asyncio.wait_for(check(), READINESS_CHECK_TIMEOUT.total_seconds())
    except Exception as error:
        return f"{type(error).__name__}: {error}"[:READINESS_ERROR_MAX_CHARS]
    return None


def system_router(checks: Mapping[str, HealthCheck], refreshers: Sequence[metrics.Refresher]) -> Router:
    @get("/health/live", media_type=MediaType.JSON, include_in_schema=True, tags=["operations"])
    async def live() -> dict[str, str]:
        """The process is up."""
        return {"status": "ok"}

    @get("/health/ready", media_type=MediaType.JSON, tags=["operations"])
    async def ready() -> Response[dict[str, Any]]:
        """Every dependency's status; 503 when one is down."""
        names = list(checks)
        results = await asyncio.gather(*(_check(checks[name]) for name in names))
        report = {
            name: {"status": "down", "error": error} if error else {"status": "up"}
            for name, error in zip(names, results, strict=True)
        }
        healthy = all(error is None for error in results)
        return Response(
            {"status": "ready" if healthy else "unavailable", "dependencies": report},
            status_code=200 if healthy else 503,
        )

    @get("/metrics", media_type="text/plain; version=0.0.4; charset=utf-8", tags=["operations"])
    async def prometheus() -> bytes:
        """Prometheus text exposition."""
        return await metrics.render(refreshers)

    @get("/swagger-ui", media_type=MediaType.HTML, include_in_schema=False)
    async def swagger() -> str:
        return _SWAGGER_PAGE

    static = create_static_files_router(
        path="/swagger-ui/static", directories=[SWAGGER_STATIC], include_in_schema=False
    )
    return Router(path="/", route_handlers=[live, ready, prometheus, swagger, static])
