"""Start and stop what a profile needs, in order, failing fast with a line that names the
dependency that cannot be reached. Shared by `craig serve`, `craig worker` and the CLI tools."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Literal

import structlog
from sqlalchemy import text

from craig.adapters.postgres import migrations
from craig.entrypoints.container import EMBEDDED_DATABASE, Container
from craig.entrypoints.settings import Profile
from craig.ports.errors import PortError

log = structlog.get_logger(__name__)


class StartupError(Exception):
    """One line for the operator: what is wrong and how to fix it."""


HealthCheck = Callable[[], Awaitable[None]]


def uses_postgres(container: Container) -> bool:
    return container.settings().profile is not Profile.MEMORY


Schema = Literal["migrate", "check", "ignore"]


async def start_database(container: Container, *, schema: Schema) -> None:
    """Start (embedded) or reach (production) PostgreSQL, then migrate or check the schema."""
    settings = container.settings()
    if settings.profile is Profile.EMBEDDED:
        server = container.embedded_postgres()
        try:
            await asyncio.to_thread(server.start)
            await asyncio.to_thread(server.ensure_database, EMBEDDED_DATABASE)
        except Exception as error:
            raise StartupError(
                f"embedded PostgreSQL under {settings.data_dir / 'pg'} did not start: {error}"
            ) from error
    if not uses_postgres(container):
        return
    database = container.postgres()
    try:
        await database.ping()
    except PortError as error:
        raise StartupError(
            f"cannot reach PostgreSQL ({database!r}): {error}; check CRAIG_DATABASE__URL and that the server runs"
        ) from error
    if schema == "migrate":
        await asyncio.to_thread(migrations.upgrade_to_head, container.database_url())
    elif schema == "check":
        await check_schema(container)


async def check_schema(container: Container) -> None:
    head = migrations.head_revision()
    async with container.postgres().connect() as conn:
        # An unmigrated database has no alembic_version; any other error must not pass for that.
        current = None
        if (await conn.execute(text("SELECT to_regclass('alembic_version')"))).scalar() is not None:
            current = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
    if current != head:
        raise StartupError(
            f"database schema is at revision {current or 'none'} but this Craig needs {head}; run `craig db upgrade`"
        )


async def stop_database(container: Container) -> None:
    settings = container.settings()
    if uses_postgres(container):
        await container.postgres().dispose()
    if settings.profile is Profile.EMBEDDED:
        await asyncio.to_thread(container.embedded_postgres().stop_if_started_here)


@asynccontextmanager
async def running(container: Container, *, schema: Schema | None = None) -> AsyncIterator[Container]:
    """Everything the profile needs, started; stopped in reverse order on exit.

    The embedded profile migrates itself (one machine, one process); production only checks that
    the schema is at head (`craig db upgrade` is an explicit operator step)."""
    settings = container.settings()
    if schema is None:
        schema = "migrate" if settings.profile is Profile.EMBEDDED else "check"
    await start_database(container, schema=schema)
    listener = container.listener() if uses_postgres(container) else None
    try:
        if listener is not None:
            await listener.start()
        await start_object_store(container)
        if settings.profile is Profile.PRODUCTION:
            await _reach_broker(container)
        yield container
    finally:
        if listener is not None:
            await listener.stop()
        await stop_database(container)


async def _reach_broker(container: Container) -> None:
    try:
        await container.event_bus().connect([])
    except PortError as error:
        raise StartupError(f"{error}; check CRAIG_BROKER__URL and that RabbitMQ runs") from error


async def start_object_store(container: Container) -> None:
    """Reach the object store and create its bucket (or directory) when missing (issue 5)."""
    store = container.object_store()
    try:
        await store.prepare()
    except PortError as error:
        settings = container.settings()
        if settings.profile is Profile.PRODUCTION:
            raise StartupError(
                f"cannot reach the S3 endpoint {settings.object_store.endpoint!r} "
                f"(bucket {settings.object_store.bucket!r}): {error}; check CRAIG_OBJECT_STORE__ENDPOINT, "
                "__ACCESS_KEY, __SECRET_KEY and __SECURE, and that the server runs"
            ) from error
        raise StartupError(f"the object store {store!r} is unusable: {error}") from error


def health_checks(container: Container) -> dict[str, HealthCheck]:
    """Each dependency's check: raises when the dependency is down."""
    checks: dict[str, HealthCheck] = {}
    if uses_postgres(container):
        checks["database"] = container.postgres().ping
    else:
        checks["database"] = _memory_ping(container)
    if container.settings().profile is Profile.PRODUCTION:
        checks["broker"] = container.event_bus().ping
    checks["object_store"] = lambda: container.object_store().ping()  # issue 5; resolved per check
    return checks


def _memory_ping(container: Container) -> HealthCheck:
    async def ping() -> None:
        async with container.memory_database().transaction():
            pass

    return ping
