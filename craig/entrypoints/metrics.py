"""Prometheus metrics: two registries per process.

:data:`REGISTRY` holds what this process did: counters and histograms updated where things
happen (HTTP, relay, inbox, workers), ``craig_build_info`` and the process and platform
collectors. Every process serves it (``craig serve`` at ``/metrics``, ``craig worker`` on its
metrics port).

:data:`SHARED_REGISTRY` holds gauges that describe shared state (backlogs, oldest ages, DLX
size); they live with the operator views (``craig.entrypoints.operations.gauges``) and are read
from the database or the broker when the API's ``/metrics`` is scraped, through the refreshers
given to :func:`render`. Workers do not serve them: one API instance's answer is the truth.

Histograms end in ``_duration_seconds``.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

import structlog
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

from craig.domain.constants import METRICS_REFRESH_TIMEOUT
from craig.entrypoints.deadline import within

log = structlog.get_logger(__name__)

REGISTRY = CollectorRegistry(auto_describe=True)
SHARED_REGISTRY = CollectorRegistry(auto_describe=True)
#: The label of a request no route matched (404, 405): the route label stays bounded.
UNMATCHED_ROUTE = "unmatched"
#: The methods of RFC 9110 and PATCH keep their name as a label; any other is counted as
#: ``_OTHER`` (OpenTelemetry's convention), so a client inventing methods adds no label. uvicorn's
#: default parser refuses most of them first, but h11 (``--http h11``) and other servers do not.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"})
OTHER_METHOD = "_OTHER"

ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)


def _version() -> str:
    try:
        return importlib.metadata.version("craig")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


build_info = Gauge(
    "craig_build_info", "Always 1; the version label says which Craig runs", ["version"], registry=REGISTRY
)
build_info.labels(_version()).set(1)

http_requests = Counter(
    "craig_http_requests_total",
    "HTTP requests answered, by method, route template (`unmatched` when none) and status",
    ["method", "route", "status"],
    registry=REGISTRY,
)
http_latency = Histogram(
    "craig_http_request_duration_seconds",
    "HTTP request duration, from the first byte in to the last byte out",
    ["method", "route"],
    registry=REGISTRY,
)
idempotency_outcomes = Counter(
    "craig_idempotency_outcomes_total", "Idempotent requests by outcome", ["outcome"], registry=REGISTRY
)
outbox_published = Counter("craig_outbox_published_total", "Events published by the relay", registry=REGISTRY)
outbox_publish_failures = Counter(
    "craig_outbox_publish_failures_total", "Failed publishes (retried with backoff)", registry=REGISTRY
)
outbox_batch_seconds = Histogram("craig_outbox_batch_duration_seconds", "Time per relay batch", registry=REGISTRY)
inbox_retries = Counter(
    "craig_inbox_retries_total", "Inbox deliveries scheduled for retry", ["consumer"], registry=REGISTRY
)
inbox_dead_lettered = Counter(
    "craig_inbox_dead_lettered_total",
    "Messages sent to the dead-letter exchange",
    ["consumer"],
    registry=REGISTRY,
)

# attachments
attachment_orphans_removed = Counter(
    "craig_attachment_orphans_removed_total", "Blobs without a row deleted by the scanner", registry=REGISTRY
)
attachment_scan_outcomes = Counter(
    "craig_attachment_scan_outcomes_total",
    "Pending rows settled by the scanner (present, missing, mismatched) and store errors",
    ["outcome"],
    registry=REGISTRY,
)

# partner exchange
exchange_dispatches = Counter(
    "craig_exchange_dispatches_total",
    "Send-job dispatches by outcome (sent, retry, failed, deferred, lost)",
    ["outcome"],
    registry=REGISTRY,
)
exchange_dispatch_seconds = Histogram(
    "craig_exchange_dispatch_duration_seconds",
    "Time per send-job dispatch, rate-limit wait included",
    registry=REGISTRY,
)
exchange_token_refreshes = Counter(
    "craig_exchange_token_refreshes_total", "OAuth2 tokens fetched from partners", registry=REGISTRY
)


# background loops (craig worker, or craig serve in memory/embedded)
worker_loop_passes = Counter(
    "craig_worker_loop_passes_total",
    "Passes of each background loop, by outcome (ok, error)",
    ["loop", "outcome"],
    registry=REGISTRY,
)
worker_loop_pass_seconds = Histogram(
    "craig_worker_loop_pass_duration_seconds", "Time per pass of each background loop", ["loop"], registry=REGISTRY
)
worker_loop_last_pass = Gauge(
    "craig_worker_loop_last_pass_timestamp_seconds",
    "When each background loop last finished a pass (Unix time)",
    ["loop"],
    registry=REGISTRY,
)
#: Registered only while a worker's health server runs (:func:`worker_ready_exported`): every
#: other process (the API's ``/metrics``) would export it as a constant 0, and an alert on it, or
#: on its absence, would be wrong for every instance that is no worker.
worker_ready = Gauge(
    "craig_worker_ready",
    "1 when every background loop of this worker finished a pass in time (its /health/ready), else 0",
    registry=None,
)
_worker_ready_servers = [0]


@contextmanager
def worker_ready_exported() -> Iterator[None]:
    """``craig_worker_ready`` is in :data:`REGISTRY` while this block runs (blocks may nest)."""
    if not _worker_ready_servers[0]:
        REGISTRY.register(worker_ready)
    _worker_ready_servers[0] += 1
    try:
        yield
    finally:
        _worker_ready_servers[0] -= 1
        if not _worker_ready_servers[0]:
            REGISTRY.unregister(worker_ready)


def observe_send_outcome(outcome: str, seconds: float) -> None:
    exchange_dispatches.labels(outcome).inc()
    exchange_dispatch_seconds.observe(seconds)


Refresher = Callable[[], Awaitable[None]]


async def _refresh(refresh: Refresher) -> None:
    try:
        await within(METRICS_REFRESH_TIMEOUT.total_seconds(), refresh())
    except Exception as error:  # a down or hung dependency must not break the scrape
        log.warning("metrics refresh failed", error=f"{type(error).__name__}: {error}")


async def render(
    refreshers: Iterable[Refresher], registries: Sequence[CollectorRegistry] = (REGISTRY, SHARED_REGISTRY)
) -> bytes:
    """The exposition text of ``registries``, after refreshing the shared gauges side by side
    (each for at most ``METRICS_REFRESH_TIMEOUT``; one that fails keeps its last value)."""
    await asyncio.gather(*(_refresh(refresh) for refresh in refreshers))
    return b"".join(generate_latest(registry) for registry in registries)
