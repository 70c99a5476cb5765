"""Run the background loops (outbox relay, inbox consumers, cleanup, scanners, send jobs).

Each loop is a :class:`Loop`: it runs until stopped, logs and backs off on errors, and never
dies quietly. ``craig worker`` runs them alone; ``craig serve`` runs them in-process for the
memory and embedded profiles.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import structlog

from craig.domain.constants import WORKER_CANCEL_GRACE, WORKER_STOP_TIMEOUT
from craig.entrypoints.container import Container
from craig.entrypoints.workers.loop import Loop
from craig.entrypoints.workers.messaging import consumers_running, consumers_running_when_reachable
from craig.entrypoints.workers.registry import loops_for

log = structlog.get_logger(__name__)


def build_loops(container: Container) -> list[Loop]:
    """Every loop this deployment runs. Features register theirs in :mod:`.registry`."""
    return loops_for(container)


@asynccontextmanager
async def workers_running(
    container: Container, loops: Sequence[Loop] | None = None, *, wait_for_broker: bool = False
) -> AsyncIterator[None]:
    """Connect the bus and start every consumer, then the loops; on exit, signal stop and wait
    for the loops (bounded), cancel stragglers, and close the bus. ``wait_for_broker`` (the
    workers inside ``craig serve``): a broker that cannot be reached does not stop the start,
    the consumers start once it answers."""
    consumers = consumers_running_when_reachable(container) if wait_for_broker else consumers_running(container)
    async with consumers, _loops_running(container, loops):
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
        _, pending = await asyncio.wait(tasks, timeout=WORKER_STOP_TIMEOUT.total_seconds()) if tasks else (set(), set())
        for task in pending:
            task.cancel()
        if pending:
            _, stuck = await asyncio.wait(pending, timeout=WORKER_CANCEL_GRACE.total_seconds())
            if stuck:  # a loop blocked where cancelling does not reach: stop without it
                log.warning("worker loops did not stop when cancelled", workers=sorted(t.get_name() for t in stuck))
        for task in tasks:
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: each loop logs its own failures
        log.info("workers stopped")
