"""A background loop: runs its pass until stopped, backs off on errors, never dies quietly."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta

import attrs
import structlog

from craig.domain.constants import WORKER_ERROR_BACKOFF_MAX, WORKER_ERROR_BACKOFF_MIN
from craig.entrypoints import metrics

log = structlog.get_logger(__name__)

#: One pass of a loop; returns True when it did work (run again at once), False when idle.
Pass = Callable[[], Awaitable[bool]]
#: Wait between idle passes (may return early, e.g. on NOTIFY).
Idle = Callable[[timedelta], Awaitable[None]]


#: When each loop of this process last finished a pass (``time.monotonic()``), by name: what the
#: worker's ``/health/ready`` reads.
LAST_PASSES: dict[str, float] = {}


#: For a loop of several lanes: when each lane last finished a pass, by loop name and lane.
_LANE_PASSES: dict[str, dict[int, float]] = {}


def _passed(name: str, started: float, outcome: str, lane: int = 0, lanes: int = 1) -> None:
    ended = time.monotonic()
    metrics.worker_loop_passes.labels(name, outcome).inc()
    metrics.worker_loop_pass_seconds.labels(name).observe(ended - started)
    if outcome != "ok":
        return
    if lanes > 1:
        # The loop is as late as its slowest lane: one lane stuck must show, though the others pass.
        passes = _LANE_PASSES.setdefault(name, {})
        passes[lane] = ended
        if len(passes) < lanes:
            return  # not every lane has passed yet
        ended = min(passes.values())
    LAST_PASSES[name] = ended
    # The gauge is Unix time; ``ended`` (the slowest lane's, with several) is monotonic.
    metrics.worker_loop_last_pass.labels(name).set(time.time() - (time.monotonic() - ended))


async def _sleep(interval: timedelta) -> None:
    await asyncio.sleep(interval.total_seconds())


@attrs.frozen
class Loop:
    name: str
    run_once: Pass
    interval: timedelta
    idle: Idle = _sleep
    #: Passes run at once, each in a lane of its own that idles and backs off by itself (the
    #: outbox relay's several batches); the loop's name, metrics and health are shared.
    lanes: int = 1

    async def run(self, stop: asyncio.Event) -> None:
        if self.lanes <= 1:
            await self._lane(stop, 0)
            return
        _LANE_PASSES.pop(self.name, None)
        async with asyncio.TaskGroup() as group:
            for lane in range(self.lanes):
                group.create_task(self._lane(stop, lane))

    async def _lane(self, stop: asyncio.Event, lane: int) -> None:
        error_delay = WORKER_ERROR_BACKOFF_MIN
        while not stop.is_set():
            started = time.monotonic()
            try:
                busy = await self.run_once()
                error_delay = WORKER_ERROR_BACKOFF_MIN
                _passed(self.name, started, "ok", lane, self.lanes)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                _passed(self.name, started, "error", lane, self.lanes)
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
