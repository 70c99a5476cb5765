"""The intake queue for operators: ``craig status``'s section and the ``/metrics`` gauges.

Both read the unscreened referrals per priority from the partial index on new referrals (no
scan of the screened history), through :class:`craig.usecases.referrals.referral_backlog.ReferralBacklog`.
"""

from __future__ import annotations

from prometheus_client import Gauge

from craig.entrypoints import metrics
from craig.entrypoints.container import Container
from craig.entrypoints.operations.ages import format_age, seconds_since
from craig.entrypoints.operations.backlogs import Entry

referrals_unscreened = Gauge(
    "craig_referrals_unscreened",
    "Referrals waiting for screening, by priority",
    ["priority"],
    registry=metrics.SHARED_REGISTRY,
)
referrals_oldest_unscreened_age = Gauge(
    "craig_referrals_oldest_unscreened_age_seconds",
    "How long the oldest referral waiting for screening has waited, by priority (0 when none waits)",
    ["priority"],
    registry=metrics.SHARED_REGISTRY,
)
referrals_overdue = Gauge(
    "craig_referrals_overdue",
    "Referrals waiting for screening past their respond-by time, by priority",
    ["priority"],
    registry=metrics.SHARED_REGISTRY,
)


def referral_gauges(container: Container) -> metrics.Refresher:
    async def refresh() -> None:
        report = await container.referral_backlog()()
        for backlog in report.priorities:
            referrals_unscreened.labels(backlog.priority).set(backlog.count)
            referrals_overdue.labels(backlog.priority).set(backlog.overdue)
            age = seconds_since(report.now, backlog.oldest_received_at)
            referrals_oldest_unscreened_age.labels(backlog.priority).set(age or 0)

    return refresh


async def intake_queue(container: Container) -> list[Entry]:
    """Per priority: waiting, overdue, the oldest's age; then the overdue total."""
    report = await container.referral_backlog()()
    entries = []
    for backlog in report.priorities:
        age = seconds_since(report.now, backlog.oldest_received_at)
        value = {"unscreened": backlog.count, "overdue": backlog.overdue, "oldest_age_seconds": age}
        shown = f"{backlog.count} waiting, {backlog.overdue} overdue, oldest {format_age(age)}"
        entries.append(Entry(("by_priority", backlog.priority), backlog.priority, value, shown))
    overdue = sum(b.overdue for b in report.priorities)
    entries.append(Entry(("unscreened",), "unscreened", sum(b.count for b in report.priorities)))
    entries.append(Entry(("overdue",), "overdue", overdue))
    return entries
