"""``craig status``: one screen for the operator at 3 a.m."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from craig.entrypoints.ages import format_age, seconds_since
from craig.entrypoints.attachment_operations import attachments_section
from craig.entrypoints.container import Container
from craig.entrypoints.placement_status import placements_section
from craig.entrypoints.send_job_status import send_jobs_section
from craig.entrypoints.unrouted_status import unrouted_section

Section = Callable[[Container], Awaitable[dict[str, Any]]]


async def idempotency_section(container: Container) -> dict[str, Any]:
    stats = await container.idempotency_store().stats()
    return {
        "slots by status": stats.by_status or {},
        "oldest processing slot age": format_age(seconds_since(stats.now, stats.oldest_processing_started_at)),
    }


async def outbox_section(container: Container) -> dict[str, Any]:
    stats = await container.outbox_relay_store().stats()
    return {
        "pending events": stats.pending,
        "failing events (retrying)": stats.failing,
        "oldest pending age": format_age(seconds_since(stats.now, stats.oldest_pending_created_at)),
    }


async def inbox_section(container: Container) -> dict[str, Any]:
    stats = await container.inbox_store().stats()
    return {
        "retrying deliveries": stats.retrying,
        "failed (dead-lettered) in inbox": stats.dead,
        "dead letters awaiting replay (DLX)": await container.dead_letters().count(),
    }


SECTIONS: dict[str, Section] = {
    "idempotency": idempotency_section,
    "outbox": outbox_section,
    "inbox": inbox_section,
    "unrouted events": unrouted_section,
    # inbox / DLX (issue 4), attachments (issue 5), placements (issue 6), send jobs (issue 7)
    "attachments": attachments_section,
    "placements": placements_section,
    "send jobs": send_jobs_section,
}


async def collect_status(container: Container) -> dict[str, dict[str, Any]]:
    report: dict[str, dict[str, Any]] = {
        "craig": {
            "profile": container.settings().profile.value,
            "data dir": str(container.settings().data_dir),
        }
    }
    for name, section in SECTIONS.items():
        try:
            report[name] = await section(container)
        except Exception as error:
            report[name] = {"error": f"{type(error).__name__}: {error}"}
    return report


def format_status(report: dict[str, dict[str, Any]]) -> str:
    lines = []
    for section, values in report.items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            if isinstance(value, dict):
                shown = ", ".join(f"{k}={v}" for k, v in sorted(value.items())) or "none"
            else:
                shown = str(value)
            lines.append(f"  {key:<32} {shown}")
    return "\n".join(lines)
