"""The backlogs an operator watches, one section of ``craig status`` each.

Every entry has a machine key (its place in ``craig status --json``, stable: scripts and alerts
read it) and a label with a value for the table; ages are seconds in JSON, ``1h02m03s`` in the
table.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from craig.domain.constants import STATUS_FULL_HOMES_SHOWN
from craig.domain.exchange import JobStatus
from craig.entrypoints.container import Container
from craig.entrypoints.operations.ages import format_age, seconds_since

_AS_VALUE: Any = object()


@attrs.frozen
class Entry:
    key: tuple[str, ...]
    label: str
    value: Any
    shown: Any = _AS_VALUE

    @property
    def table_value(self) -> Any:
        return self.value if self.shown is _AS_VALUE else self.shown


def age(key: str, label: str, seconds: float | None) -> Entry:
    return Entry((key,), label, seconds, format_age(seconds))


Reader = Callable[[Container], Awaitable[list[Entry]]]


async def idempotency(container: Container) -> list[Entry]:
    stats = await container.idempotency_store().stats()
    return [
        Entry(("slots_by_status",), "slots by status", dict(stats.by_status or {})),
        age(
            "oldest_processing_age_seconds",
            "oldest processing slot age",
            seconds_since(stats.now, stats.oldest_processing_started_at),
        ),
    ]


async def outbox(container: Container) -> list[Entry]:
    stats = await container.outbox_relay_store().stats()
    return [
        Entry(("pending",), "pending events", stats.pending),
        Entry(("failing",), "failing events (retrying)", stats.failing),
        age(
            "oldest_pending_age_seconds",
            "oldest pending age",
            seconds_since(stats.now, stats.oldest_pending_created_at),
        ),
    ]


async def inbox(container: Container) -> list[Entry]:
    stats = await container.inbox_store().stats()
    return [
        Entry(("retrying",), "retrying deliveries", stats.retrying),
        Entry(("dead_lettered",), "failed (dead-lettered) in inbox", stats.dead),
        Entry(("awaiting_replay",), "dead letters awaiting replay (DLX)", await container.dead_letters().count()),
    ]


async def unrouted_events(container: Container) -> list[Entry]:
    """How many events no subscription took wait in the unrouted queue, and where."""
    unrouted = container.unrouted_events()
    return [
        Entry(("count",), "events no subscription took", await unrouted.count()),
        Entry(("location",), "kept in", unrouted.location),
    ]


async def attachments(container: Container) -> list[Entry]:
    """Pending attachment rows per table and the oldest one's age, and the scanner's timing."""
    settings = container.settings().attachments
    entries: list[Entry] = []
    for table, stats in (await container.attachment_scanner().backlog()).items():
        seconds = seconds_since(stats.now, stats.oldest_pending_created_at)
        entries.append(Entry(("tables", table, "pending"), f"{table}: pending", stats.pending))
        oldest = ("tables", table, "oldest_pending_age_seconds")
        entries.append(Entry(oldest, f"{table}: oldest pending age", seconds, format_age(seconds)))
        failed = ("tables", table, "failed")
        entries.append(Entry(failed, f"{table}: failed, kept for an operator", stats.failed))
    entries.append(
        Entry(
            ("scanner",),
            "scanner grace / interval",
            {"grace_seconds": settings.scan_grace_seconds, "interval_seconds": settings.scan_interval_seconds},
            f"{settings.scan_grace_seconds:g}s / {settings.scan_interval_seconds:g}s",
        )
    )
    return entries


async def placements(container: Container) -> list[Entry]:
    """Homes at capacity, and occupancy drift."""
    uow = container.uow()
    async with uow:
        stats = await uow.foster_homes.stats(STATUS_FULL_HOMES_SHOWN)
    shown = ", ".join(f"{home.name} ({home.occupancy}/{home.capacity})" for home in stats.full_homes)
    if stats.at_capacity > len(stats.full_homes):
        shown += f", … {stats.at_capacity - len(stats.full_homes)} more"
    full = [
        {"id": str(home.id), "name": home.name, "occupancy": home.occupancy, "capacity": home.capacity}
        for home in stats.full_homes
    ]
    drifted = [str(home_id) for home_id in stats.drifted]
    return [
        Entry(("foster_homes",), "foster homes", stats.homes),
        Entry(("homes_at_capacity",), "homes at capacity", stats.at_capacity),
        Entry(("full_homes",), "full homes", full, shown or "-"),
        # Occupancy must equal the active placements; anything listed here needs investigating.
        Entry(("homes_with_occupancy_drift",), "homes with occupancy drift", drifted, ", ".join(drifted) or "none"),
    ]


async def send_jobs(container: Container) -> list[Entry]:
    """Jobs by status, and how long the oldest due job has waited for a worker."""
    stats = await container.send_job_backlog()()
    return [
        Entry(("jobs_by_status",), "jobs by status", {str(s): stats.by_status.get(str(s), 0) for s in JobStatus}),
        age("oldest_due_age_seconds", "oldest due job age", seconds_since(stats.now, stats.oldest_due_at)),
        age(
            "oldest_expired_lease_age_seconds",
            "oldest expired lease (in flight, not recovered)",
            seconds_since(stats.now, stats.oldest_expired_lease_at),
        ),
    ]
