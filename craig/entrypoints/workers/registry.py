"""Which background loops a deployment runs (the one list to extend)."""

from __future__ import annotations

import functools
from datetime import timedelta

from craig.domain.constants import (
    CLEANUP_INTERVAL,
    INBOX_BROADCAST_RETENTION,
    INTAKE_RATE_LIMIT_RETENTION,
    PURGE_BATCH_SIZE,
)
from craig.entrypoints.container import Container
from craig.entrypoints.workers.attachment_scanner import attachment_scanner_loop
from craig.entrypoints.workers.audit_sealer import audit_sealer_loop
from craig.entrypoints.workers.consumers import subscriptions_for
from craig.entrypoints.workers.loop import Loop
from craig.entrypoints.workers.messaging import relay_loop
from craig.entrypoints.workers.send_jobs import send_job_loop
from craig.usecases.operations import Purge, PurgeExpired, Retention


def purge_broadcast_inbox(container: Container) -> Purge:
    """Inbox rows left under the per-instance keys of the broadcast subscriptions."""
    broadcast = [s.consumer for s in subscriptions_for(container) if s.broadcast]
    return functools.partial(container.inbox_store().purge_broadcast, broadcast)


def cleanup_loop(container: Container) -> Loop:
    settings = container.settings()
    purge = PurgeExpired(
        [
            Retention(
                "idempotency",
                container.idempotency_store().purge,
                timedelta(hours=settings.idempotency.retention_hours),
            ),
            Retention(
                "outbox",
                container.outbox_relay_store().purge_published,
                timedelta(days=settings.outbox.retention_days),
            ),
            Retention(
                "inbox",
                container.inbox_store().purge_processed,
                timedelta(days=settings.inbox.retention_days),
            ),
            Retention("broadcast inbox", purge_broadcast_inbox(container), INBOX_BROADCAST_RETENTION),
            Retention("intake rate limits", container.rate_limiter().purge_idle, INTAKE_RATE_LIMIT_RETENTION),
            Retention(
                "exchange",
                container.purge_delivered_transactions(),
                timedelta(days=settings.exchange.retention_days),
            ),
            Retention("audit", container.audit.purge_expired(), timedelta(days=settings.audit.retention_days)),
        ],
        batch_size=PURGE_BATCH_SIZE,
    )
    return Loop("cleanup", purge.run_once, CLEANUP_INTERVAL)


def loops_for(container: Container) -> list[Loop]:
    return [
        cleanup_loop(container),
        # outbox relay (issue 4); the inbox consumers run in `workers_running`
        relay_loop(container),
        # attachment scanner (issue 5)
        attachment_scanner_loop(container),
        # partner send-job worker (issue 7)
        send_job_loop(container),
        audit_sealer_loop(container),
    ]
