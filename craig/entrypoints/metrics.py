"""Prometheus metrics (one registry per process).

Counters and histograms are updated where things happen (HTTP, relay, inbox, workers).
Gauges that describe shared state (backlogs, oldest ages, DLX size) are read from the database
when ``/metrics`` is scraped, through the refreshers the composition root supplies.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

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
outbox_pending = Gauge("craig_outbox_pending", "Unpublished events", registry=REGISTRY)
outbox_oldest_age = Gauge(
    "craig_outbox_oldest_pending_age_seconds", "Age of the oldest unpublished event", registry=REGISTRY
)
inbox_retries = Counter(
    "craig_inbox_retries_total", "Inbox deliveries scheduled for retry", ["consumer"], registry=REGISTRY
)
inbox_dead_lettered = Counter(
    "craig_inbox_dead_lettered_total",
    "Messages sent to the dead-letter exchange",
    ["consumer"],
    registry=REGISTRY,
)
dlx_messages = Gauge("craig_dlx_messages", "Dead-lettered messages awaiting an operator", registry=REGISTRY)
idempotency_slots = Gauge("craig_idempotency_slots", "Idempotency slots by status", ["status"], registry=REGISTRY)

Refresher = Callable[[], Awaitable[None]]


async def render(refreshers: Iterable[Refresher]) -> bytes:
    """The exposition text, after refreshing the database-backed gauges."""
    for refresh in refreshers:
        try:
            await refresh()
        except Exception as error:  # a down dependency must not break the scrape
            log.warning("metrics refresh failed", error=str(error))
    return generate_latest(REGISTRY)
