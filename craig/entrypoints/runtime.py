"""Start and stop what a profile needs, in order, failing fast with a line that names the
dependency that cannot be reached. Shared by `craig serve`, `craig worker` and the CLI tools.

What there is to start is the adapter set's business (:mod:`craig.entrypoints.profiles`): each
part is one of its ``providers.Resource`` (``database_running``, ``listener_running``,
``object_store_running``, ``broker_running``), and a part the profile keeps in process starts
nothing. This module only starts the parts a command needs, in order, and stops whatever was
started, in reverse, also when starting failed halfway.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Literal

import structlog

from craig.domain.constants import DEPENDENCY_RETRY_MAX, DEPENDENCY_RETRY_MIN
from craig.entrypoints.container import Container
from craig.entrypoints.profiles.lifecycle import HealthCheck, Schema, StartupError

__all__ = [
    "PARTS",
    "HealthCheck",
    "Part",
    "Schema",
    "StartupError",
    "health_checks",
    "keep_trying",
    "running",
    "start",
    "start_what_answers",
]

log = structlog.get_logger(__name__)

Part = Literal["database", "listener", "object_store", "broker"]
#: Every part, in the order they start (they stop in reverse).
PARTS: tuple[Part, ...] = ("database", "listener", "object_store", "broker")


def _resource(container: Container, part: Part) -> Any:
    return getattr(container, f"{part}_running")


async def start(container: Container, part: Part, *, schema: Schema | None = None) -> None:
    """Start one part (once; again only after it stopped). ``schema`` replaces the profile's
    schema policy for the database: ``craig db`` migrates by itself, so it passes ``ignore``."""
    options = {"schema": schema} if part == "database" and schema is not None else {}
    await _resource(container, part)(**options)


async def _stop(container: Container, part: Part) -> None:
    resource = _resource(container, part)
    while resource.overridden:  # a test's resource in place of the profile's
        resource = resource.last_overriding
    if resource.initialized:
        await resource.shutdown()


@asynccontextmanager
async def running(
    container: Container,
    *,
    schema: Schema | None = None,
    parts: Sequence[Part] = PARTS,
    tolerate: Sequence[Part] = (),
) -> AsyncIterator[Container]:
    """``parts`` of what the profile needs (by default everything), started in order; on exit,
    everything started (also a part another one needed) is stopped in reverse order.

    The database's schema policy is the profile's (embedded migrates itself; production only
    checks that the schema is at head, as ``craig db upgrade`` is an explicit operator step)
    unless ``schema`` says otherwise.

    A part in ``tolerate`` that cannot be reached (:attr:`StartupError.transient`) does not stop
    the start: a ``degraded`` warning is logged and it is started again in the background, the
    wait doubling from ``DEPENDENCY_RETRY_MIN`` to ``DEPENDENCY_RETRY_MAX``, until it answers. One
    that refuses (wrong credentials) is still refused at once."""
    async with AsyncExitStack() as stack:
        for part in PARTS:
            stack.push_async_callback(_stop, container, part)
        for part in PARTS:
            if part not in parts:
                continue
            if part not in tolerate:
                await start(container, part, schema=schema)
                continue
            try:
                await start(container, part, schema=schema)
            except StartupError as error:
                if not error.transient:
                    raise
                log.warning("dependency degraded: started without it, retrying", dependency=part, error=str(error))
                await stack.enter_async_context(keep_trying(part, _starter(container, part, schema)))
        yield container


def _starter(container: Container, part: Part, schema: Schema | None) -> Callable[[], Awaitable[None]]:
    async def again() -> None:
        await start(container, part, schema=schema)

    return again


@asynccontextmanager
async def keep_trying(name: str, attempt: Callable[[], Awaitable[object]]) -> AsyncIterator[None]:
    """Run ``attempt`` in the background until it succeeds once, the wait doubling from
    ``DEPENDENCY_RETRY_MIN`` to ``DEPENDENCY_RETRY_MAX`` between failures; on exit, stop trying."""

    async def retry() -> None:
        delay = DEPENDENCY_RETRY_MIN
        while True:
            await asyncio.sleep(delay.total_seconds())
            try:
                await attempt()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                delay = min(delay * 2, DEPENDENCY_RETRY_MAX)
                log.info("dependency still down", dependency=name, error=str(error), retry_in=str(delay))
                continue
            log.info("dependency back", dependency=name)
            return

    task = asyncio.create_task(retry(), name=f"reconnect:{name}")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


async def start_what_answers(container: Container, parts: Sequence[Part]) -> dict[Part, str]:
    """Start each of ``parts`` that can be started; the others, with the line saying why not.
    Whatever started is stopped by the enclosing :func:`running`."""
    down: dict[Part, str] = {}
    for part in PARTS:
        if part in parts:
            try:
                await start(container, part)
            except StartupError as error:
                down[part] = str(error)
    return down


def health_checks(container: Container) -> dict[str, HealthCheck]:
    """Each dependency's check: raises when the dependency is down."""
    checks: dict[str, HealthCheck] = container.health_checks()
    return checks
