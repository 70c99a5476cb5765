"""``craig worker``'s own probes and metrics, on ``CRAIG_WORKERS__METRICS_PORT``.

``/health/live``: the process runs. ``/health/ready``: every loop it runs finished a pass within
``WORKER_READY_INTERVALS`` of its interval plus ``WORKER_READY_GRACE`` (a loop that has not yet
finished its first pass is given as long, counted from the start), and the bus its consumers
use answers; the body names each loop with its last pass's age and its limit. ``/metrics``: this
process's registry (the loops' passes, the relay, the consumers, the scanner, the send jobs, the
cleanup, ``craig_build_info``, the process collectors); the shared backlog gauges are the API's.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import msgspec

from craig.domain.constants import (
    READINESS_CHECK_TIMEOUT,
    READINESS_ERROR_MAX_CHARS,
    WORKER_READY_GRACE,
    WORKER_READY_INTERVALS,
)
from craig.entrypoints import metrics
from craig.entrypoints.deadline import within
from craig.entrypoints.ops_server import JSON_CONTENT_TYPE, METRICS_CONTENT_TYPE, Answer, ops_server
from craig.entrypoints.workers.loop import LAST_PASSES, Loop
from craig.ports.messaging import EventBus


def loop_report(loops: Sequence[Loop], started: float, now: float) -> dict[str, dict[str, Any]]:
    """Each loop: ``ok`` or ``late``, its last pass's age (None before the first) and its limit."""
    report: dict[str, dict[str, Any]] = {}
    for loop in loops:
        limit = loop.interval.total_seconds() * WORKER_READY_INTERVALS + WORKER_READY_GRACE.total_seconds()
        last = LAST_PASSES.get(loop.name)
        age = None if last is None or last < started else round(now - last, 3)
        waited = now - started if age is None else age
        report[loop.name] = {
            "status": "ok" if waited <= limit else "late",
            "last_pass_age_seconds": age,
            "limit_seconds": limit,
        }
    return report


async def _bus_state(bus: EventBus) -> dict[str, Any]:
    try:
        await within(READINESS_CHECK_TIMEOUT.total_seconds(), bus.ping())
    except Exception as error:
        return {"status": "down", "error": f"{type(error).__name__}: {error}"[:READINESS_ERROR_MAX_CHARS]}
    return {"status": "ok"}


@asynccontextmanager
async def worker_health_server(host: str, port: int, loops: Sequence[Loop], bus: EventBus) -> AsyncIterator[int]:
    """Serve the worker's probes and metrics on ``host:port`` (yields the port bound)."""
    started = time.monotonic()

    async def live() -> Answer:
        return Answer(200, JSON_CONTENT_TYPE, b'{"status":"ok"}')

    async def readiness() -> tuple[bool, dict[str, Any]]:
        report = loop_report(loops, started, time.monotonic())
        consumers = await _bus_state(bus)
        healthy = consumers["status"] == "ok" and all(loop["status"] == "ok" for loop in report.values())
        metrics.worker_ready.set(1 if healthy else 0)
        return healthy, {"status": "ready" if healthy else "unavailable", "loops": report, "consumers": consumers}

    async def ready() -> Answer:
        healthy, body = await readiness()
        return Answer(200 if healthy else 503, JSON_CONTENT_TYPE, msgspec.json.encode(body))

    async def prometheus() -> Answer:
        await readiness()  # craig_worker_ready as /health/ready would answer now
        return Answer(200, METRICS_CONTENT_TYPE, await metrics.render([], [metrics.REGISTRY]))

    handlers = {"/health/live": live, "/health/ready": ready, "/metrics": prometheus}
    with metrics.worker_ready_exported():
        async with ops_server(host, port, handlers) as bound:
            yield bound
