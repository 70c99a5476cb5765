"""Run the background loops (outbox relay, inbox consumers, cleanup, scanners, send jobs).

Each loop is a :class:`Loop`: it runs until stopped, logs and backs off on errors, and never
dies quietly. ``craig worker`` runs them alone; ``craig serve`` runs them in-process for the
memory and embedded profiles.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta

import attrs
import structlog

from craig.entrypoints.container import Container

log = structlog.get_logger(__name__)

#: One pass of a loop; returns True when it did work (run again at once), False when idle.
Pass = Callable[[], Awaitable[bool]]
#: Wait between idle passes (may return early, e.g. on NOTIFY).
Idle = Callable[[timedelta], Awaitable[None]]

ERROR_BACKOFF_MAX = timedelta(seconds=30)


async def _sleep(interval: timedelta) -> None:
    await asyncio.sleep(interval.total_seconds())


@attrs.frozen
class Loop:
    name: str
    run_once: Pass
    interval: timedelta
    idle: Idle = _sleep

    async def run(self, stop: asyncio.Event) -> None:
        error_delay = timedelta(milliseconds=200)
        while not stop.is_set():
            try:
                busy = await self.run_once()
                error_delay = timedelta(milliseconds=200)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("worker pass failed", worker=self.name, error=str(error), retry_in=str(error_delay))
                await _wait_or_stop(stop, error_delay, _sleep)
                error_delay = min(error_delay * 2, ERROR_BACKOFF_MAX)
                continue
            if not busy:
                await _wait_or_stop(stop, self.interval, self.idle)


async def _wait_or_stop(stop: asyncio.Event, interval: timedelta, idle: Idle) -> None:
    waiter = asyncio.ensure_future(idle(interval))
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (waiter, stopper):
            task.cancel()
        for task in (waiter, stopper):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def build_loops(container: Container) -> list[Loop]:
    """Every loop this deployment runs. Features register theirs in :mod:`.registry`."""
    from craig.entrypoints.workers.registry import loops_for

    return loops_for(container)


@asynccontextmanager
async def workers_running(container: Container, loops: Sequence[Loop] | None = None) -> AsyncIterator[None]:
    """Connect the bus and start every consumer, then the loops; on exit, signal stop and wait
    for the loops (bounded), cancel stragglers, and close the bus."""
    from craig.entrypoints.workers.messaging import consumers_running

    async with consumers_running(container), _loops_running(container, loops):
        yield


@asynccontextmanager
async def _loops_running(container: Container, loops: Sequence[Loop] | None) -> AsyncIterator[None]:
    stop = asyncio.Event()
    chosen = list(build_loops(container) if loops is None else loops)
    tasks = [asyncio.create_task(loop.run(stop), name=f"worker:{loop.name}") for loop in chosen]
    log.info("workers started", workers=[loop.name for loop in chosen])
    try:
        yield
    finally:
        stop.set()
        _, pending = await asyncio.wait(tasks, timeout=10) if tasks else (set(), set())
        for task in pending:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        log.info("workers stopped")
