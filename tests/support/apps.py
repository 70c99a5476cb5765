"""Apps for tests: a container per adapter kind, tokens, and a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import uvicorn
from dependency_injector import providers
from litestar import Litestar

from craig.domain.access import Role
from craig.entrypoints.container import Container, build_container
from craig.entrypoints.http.app import create_app
from craig.entrypoints.profiles import EmbeddedAdapters
from craig.entrypoints.profiles.lifecycle import ExternalPostgres
from craig.entrypoints.settings import (
    AuthSettings,
    DatabaseSettings,
    Profile,
    Settings,
)
from craig.entrypoints.tokens import mint
from tests.support.ciphers import FIELD_KEY
from tests.support.services import free_port

JWT_SECRET = "test-secret-that-is-long-enough-for-hs256-0123456789"


def make_settings(kind: str, data_dir: Path, pg_url: str | None = None, **sections: Any) -> Settings:
    """memory: every adapter in memory. postgres: a real database, the rest in process."""
    base = Settings(
        profile=Profile.MEMORY if kind == "memory" else Profile.PRODUCTION,
        data_dir=data_dir,
        log_json=False,
        auth=AuthSettings(jwt_secret=JWT_SECRET),
        database=DatabaseSettings(url=pg_url or ""),
        field_encryption_key=FIELD_KEY,
    )
    return attrs.evolve(base, **sections)


def make_container(settings: Settings) -> Container:
    if settings.profile is not Profile.PRODUCTION:
        return build_container(settings)
    # The embedded adapter set on the test's PostgreSQL (migrated: the schema is checked, as in
    # production); the broker and object store stay in process unless a test overrides them.
    container = build_container(settings, adapters=EmbeddedAdapters)
    container.postgres_server.override(providers.Singleton(ExternalPostgres))
    container.database_url.override(providers.Object(settings.database.url))
    container.schema.override(providers.Object("check"))
    return container


def token(
    container: Container, *, role: Role = Role.CASEWORKER, sub: uuid.UUID | None = None, name: str = "Ann"
) -> str:
    return mint(container.settings().auth, sub=sub or uuid.uuid4(), role=role, name=name, ttl_seconds=3600)


def auth(container: Container, **kw: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {token(container, **kw)}"}


@asynccontextmanager
async def live_server(app: Litestar) -> AsyncIterator[str]:
    """Serve ``app`` over real TCP on 127.0.0.1; yields the base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_config=None, access_log=False, lifespan="on", proxy_headers=False
        )
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await task


@asynccontextmanager
async def serving(
    kind: str,
    data_dir: Path,
    pg_url: str | None = None,
    *,
    extra_v1_routes: Sequence[Any] = (),
    **sections: Any,
) -> AsyncIterator[tuple[Container, httpx.AsyncClient]]:
    """An app on a live server and a client for it."""
    container = make_container(make_settings(kind, data_dir, pg_url, **sections))
    app = create_app(container, extra_v1_routes=extra_v1_routes)
    async with live_server(app) as base, httpx.AsyncClient(base_url=base, timeout=60) as client:
        yield container, client
