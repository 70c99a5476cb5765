"""Prometheus metrics (one registry per process).

Counters and histograms are updated where things happen (HTTP, relay, inbox, workers).
Gauges that describe shared state (backlogs, oldest ages, DLX size) live with the operator views
(``craig.entrypoints.operations.gauges``): they are read from the database when ``/metrics`` is
scraped, through the refreshers given to :func:`render`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

import structlog
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

log = structlog.get_logger(__name__)

REGISTRY = CollectorRegistry(auto_describe=True)

http_requests = Counter(
    "craig_http_requests_total", "HTTP requests answered", ["method", "route", "status"], registry=REGISTRY
)
http_latency = Histogram("craig_http_request_seconds", "HTTP request latency", ["method", "route"], registry=REGISTRY)
idempotency_outcomes = Counter(
    "craig_idempotency_outcomes_total", "Idempotent requests by outcome", ["outcome"], registry=REGISTRY
)
outbox_published = Counter("craig_outbox_published_total", "Events published by the relay", registry=REGISTRY)
outbox_publish_failures = Counter(
    "craig_outbox_publish_failures_total", "Failed publishes (retried with backoff)", registry=REGISTRY
)
outbox_batch_seconds = Histogram("craig_outbox_batch_seconds", "Time per relay batch", registry=REGISTRY)
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
    "craig_exchange_dispatch_seconds", "Time per send-job dispatch, rate-limit wait included", registry=REGISTRY
)
exchange_token_refreshes = Counter(
    "craig_exchange_token_refreshes_total", "OAuth2 tokens fetched from partners", registry=REGISTRY
)


def observe_send_outcome(outcome: str, seconds: float) -> None:
    exchange_dispatches.labels(outcome).inc()
    exchange_dispatch_seconds.observe(seconds)


Refresher = Callable[[], Awaitable[None]]


async def render(refreshers: Iterable[Refresher]) -> bytes:
    """The exposition text, after refreshing the database-backed gauges."""
    for refresh in refreshers:
        try:
            await refresh()
        except Exception as error:  # a down dependency must not break the scrape
            log.warning("metrics refresh failed", error=str(error))
    return generate_latest(REGISTRY)
