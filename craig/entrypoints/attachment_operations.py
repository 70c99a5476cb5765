"""Operator views of the attachment backlog (issue 5): the metrics refresher and the status section."""

from __future__ import annotations

from typing import Any

from craig.entrypoints import metrics
from craig.entrypoints.ages import format_age, seconds_since
from craig.entrypoints.container import Container


def attachment_backlog(container: Container) -> metrics.Refresher:
    """Refresh the pending count and the oldest pending age (database clock) on each scrape."""

    async def refresh() -> None:
        backlog = await container.attachment_scanner().backlog()
        pending = sum(stats.pending for stats in backlog.values())
        ages = [seconds_since(stats.now, stats.oldest_pending_created_at) or 0.0 for stats in backlog.values()]
        metrics.attachments_pending.set(pending)
        metrics.attachments_oldest_pending_age.set(max(ages, default=0))

    return refresh


async def attachments_section(container: Container) -> dict[str, Any]:
    """``craig status``: pending attachment rows per table and the oldest one's age."""
    settings = container.settings().attachments
    report: dict[str, Any] = {}
    for table, stats in (await container.attachment_scanner().backlog()).items():
        report[f"{table}: pending"] = stats.pending
        report[f"{table}: oldest pending age"] = format_age(seconds_since(stats.now, stats.oldest_pending_created_at))
    report["scanner grace / interval"] = f"{settings.scan_grace_seconds:g}s / {settings.scan_interval_seconds:g}s"
    return report
