"""A background loop: runs its pass until stopped, backs off on errors, never dies quietly."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import timedelta

import attrs
import structlog

from craig.domain.constants import WORKER_ERROR_BACKOFF_MAX, WORKER_ERROR_BACKOFF_MIN

log = structlog.get_logger(__name__)

#: One pass of a loop; returns True when it did work (run again at once), False when idle.
Pass = Callable[[], Awaitable[bool]]
#: Wait between idle passes (may return early, e.g. on NOTIFY).
Idle = Callable[[timedelta], Awaitable[None]]


async def _sleep(interval: timedelta) -> None:
    await asyncio.sleep(interval.total_seconds())


@attrs.frozen
class Loop:
    name: str
    run_once: Pass
    interval: timedelta
    idle: Idle = _sleep

    async def run(self, stop: asyncio.Event) -> None:
        error_delay = WORKER_ERROR_BACKOFF_MIN
        while not stop.is_set():
            try:
                busy = await self.run_once()
                error_delay = WORKER_ERROR_BACKOFF_MIN
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("worker pass failed", worker=self.name, error=str(error), retry_in=str(error_delay))
                await wait_or_stop(stop, error_delay, _sleep)
                error_delay = min(error_delay * 2, WORKER_ERROR_BACKOFF_MAX)
                continue
            if not busy:
                await wait_or_stop(stop, self.interval, self.idle)


async def wait_or_stop(stop: asyncio.Event, interval: timedelta, idle: Idle) -> None:
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
