"""Operator views of the send-job queue (issue 7): the ``craig status`` section and the gauges."""

from __future__ import annotations

from typing import Any

from craig.domain.exchange import JobStatus
from craig.entrypoints import metrics
from craig.entrypoints.ages import format_age, seconds_since
from craig.entrypoints.container import Container


async def send_jobs_section(container: Container) -> dict[str, Any]:
    """Jobs by status, and how long the oldest due job has waited for a worker."""
    stats = await container.send_job_backlog()()
    return {
        "jobs by status": {str(s): stats.by_status.get(str(s), 0) for s in JobStatus},
        "oldest due job age": format_age(seconds_since(stats.now, stats.oldest_due_at)),
    }


def send_job_backlog(container: Container) -> metrics.Refresher:
    """Refresh ``craig_exchange_send_jobs`` and the oldest due age on each scrape."""

    async def refresh() -> None:
        stats = await container.send_job_backlog()()
        for status in JobStatus:
            metrics.exchange_send_jobs.labels(str(status)).set(stats.by_status.get(str(status), 0))
        metrics.exchange_oldest_due_age.set(seconds_since(stats.now, stats.oldest_due_at) or 0)

    return refresh
