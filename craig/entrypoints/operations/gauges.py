"""The database-backed gauges of ``/metrics``: backlogs, oldest ages, dead letters.

They describe shared state, so every process reads them from the database (or the broker) when
``/metrics`` is scraped, through the refreshers below, rather than counting them itself.
"""

from __future__ import annotations

from prometheus_client import Gauge

from craig.domain.exchange import JobStatus
from craig.entrypoints import metrics
from craig.entrypoints.container import Container
from craig.entrypoints.operations.ages import seconds_since
from craig.entrypoints.operations.intake_queue import referral_gauges

REGISTRY = metrics.SHARED_REGISTRY

outbox_pending = Gauge("craig_outbox_pending", "Unpublished events", registry=REGISTRY)
outbox_oldest_age = Gauge(
    "craig_outbox_oldest_pending_age_seconds", "Age of the oldest unpublished event", registry=REGISTRY
)
dlx_messages = Gauge("craig_dlx_messages", "Dead-lettered messages awaiting an operator", registry=REGISTRY)
unrouted_events = Gauge(
    "craig_unrouted_events", "Events no subscription took, kept in the unrouted queue", registry=REGISTRY
)
idempotency_slots = Gauge("craig_idempotency_slots", "Idempotency slots by status", ["status"], registry=REGISTRY)
attachments_pending = Gauge(
    "craig_attachments_pending", "Attachment rows still pending (blob not confirmed)", registry=REGISTRY
)
attachments_failed = Gauge(
    "craig_attachments_failed",
    "Attachment rows the scanner failed (stored object not what the upload declared), kept for an operator",
    registry=REGISTRY,
)
attachments_oldest_pending_age = Gauge(
    "craig_attachments_oldest_pending_age_seconds", "Age of the oldest pending attachment row", registry=REGISTRY
)
exchange_send_jobs = Gauge("craig_exchange_send_jobs", "Send jobs by status", ["status"], registry=REGISTRY)
exchange_oldest_due_age = Gauge(
    "craig_exchange_oldest_due_age_seconds", "How long the oldest due send job has waited", registry=REGISTRY
)
exchange_oldest_expired_lease_age = Gauge(
    "craig_exchange_oldest_expired_lease_age_seconds",
    "How long ago the lease of the oldest in-flight send job ran out (no worker has recovered it)",
    registry=REGISTRY,
)


def idempotency_backlog(container: Container) -> metrics.Refresher:
    async def refresh() -> None:
        stats = await container.idempotency_store().stats()
        for status in ("processing", "succeeded", "failed"):
            idempotency_slots.labels(status).set(stats.by_status.get(status, 0))

    return refresh


def outbox_backlog(container: Container) -> metrics.Refresher:
    async def refresh() -> None:
        stats = await container.outbox_relay_store().stats()
        outbox_pending.set(stats.pending)
        outbox_oldest_age.set(seconds_since(stats.now, stats.oldest_pending_created_at) or 0)

    return refresh


def dead_letter_backlog(container: Container) -> metrics.Refresher:
    async def refresh() -> None:
        dlx_messages.set(await container.dead_letters().count())

    return refresh


def unrouted_backlog(container: Container) -> metrics.Refresher:
    """``craig_unrouted_events``: the unrouted queue's depth."""

    async def refresh() -> None:
        unrouted_events.set(await container.unrouted_events().count())

    return refresh


def attachment_backlog(container: Container) -> metrics.Refresher:
    """The pending count and the oldest pending age (database clock)."""

    async def refresh() -> None:
        backlog = await container.attachment_scanner().backlog()
        pending = sum(stats.pending for stats in backlog.values())
        ages = [seconds_since(stats.now, stats.oldest_pending_created_at) or 0.0 for stats in backlog.values()]
        attachments_pending.set(pending)
        attachments_failed.set(sum(stats.failed for stats in backlog.values()))
        attachments_oldest_pending_age.set(max(ages, default=0))

    return refresh


def send_job_backlog(container: Container) -> metrics.Refresher:
    """``craig_exchange_send_jobs`` by status and the oldest due job's age."""

    async def refresh() -> None:
        stats = await container.send_job_backlog()()
        for status in JobStatus:
            exchange_send_jobs.labels(str(status)).set(stats.by_status.get(str(status), 0))
        exchange_oldest_due_age.set(seconds_since(stats.now, stats.oldest_due_at) or 0)
        exchange_oldest_expired_lease_age.set(seconds_since(stats.now, stats.oldest_expired_lease_at) or 0)

    return refresh


def metric_refreshers(container: Container) -> list[metrics.Refresher]:
    """Every database-backed gauge's refresher, run on each scrape."""
    return [
        idempotency_backlog(container),
        outbox_backlog(container),
        dead_letter_backlog(container),
        unrouted_backlog(container),
        attachment_backlog(container),
        send_job_backlog(container),
        referral_gauges(container),
    ]
