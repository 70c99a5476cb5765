"""The attachment scanner loop: one reconciliation pass every ``scan_interval_seconds``."""

from __future__ import annotations

from datetime import timedelta

import structlog

from craig.entrypoints import metrics
from craig.entrypoints.container import Container
from craig.entrypoints.workers.loop import Loop

log = structlog.get_logger(__name__)


def attachment_scanner_loop(container: Container) -> Loop:
    scanner = container.attachment_scanner()
    interval: timedelta = container.attachment_scan_interval()

    async def run_once() -> bool:
        report = await scanner.run_once()
        for outcome in ("present", "missing", "mismatched", "store_errors"):
            count = getattr(report, outcome)
            if count:
                metrics.attachment_scan_outcomes.labels(outcome).inc(count)
        metrics.attachment_orphans_removed.inc(report.orphans_removed)
        if report.present or report.missing or report.mismatched or report.orphans_removed:
            log.info(
                "attachment scan pass",
                present=report.present,
                missing=report.missing,
                mismatched=report.mismatched,
                orphans_removed=report.orphans_removed,
            )
        return report.more

    return Loop("attachment-scanner", run_once, interval)
