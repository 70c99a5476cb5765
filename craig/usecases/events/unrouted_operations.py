"""Operators' view of unrouted events (events no subscription took): list them, replay them
once a consumer takes their type, or discard the ones nobody will ever want.

An event is unrouted when it was published while no subscription wanted its type: a type no
consumer of the deployment takes yet, or a consumer since removed. Replaying offers it to the
consumers of THIS deployment that take its type (the same list ``craig worker`` consumes with):
it is published again, and removed from the unrouted events only once the bus confirmed that
publish. An event no consumer takes stays where it is, and the operator is told why. Both
actions are audited like ``craig dlx``'s: one entry (``unrouted_replay`` / ``unrouted_discard``,
the ids asked for or ``all``) in a transaction of its own BEFORE anything is touched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from uuid import UUID

import attrs

from craig.domain.audit import AuditAction
from craig.domain.constants import AUDIT_MAX_RESOURCE_IDS, UNROUTED_SCAN_MAX_EVENTS
from craig.domain.routing import topic_matches
from craig.ports.messaging import EventBus, Subscription, UnroutedEvent, UnroutedEvents
from craig.usecases.audit.record import AuditWork, operator_entry, record_alone
from craig.usecases.audit.resource_types import UNROUTED_EVENT

#: The ``resource_id`` of a replay of every unrouted event (``--all``).
EVERY_UNROUTED_EVENT = "all"


@attrs.frozen
class Kept:
    """An unrouted event a replay left where it is, and why."""

    event: UnroutedEvent
    why: str


@attrs.frozen
class ReplayReport:
    replayed: list[UnroutedEvent]
    kept: list[Kept]


class UnroutedOperations:
    def __init__(
        self,
        unrouted: UnroutedEvents,
        bus: EventBus,
        subscriptions: Sequence[Subscription],
        uow_factory: Callable[[], AuditWork],
    ) -> None:
        self.unrouted = unrouted
        self.bus = bus
        # A broadcast subscription's queues live only as long as their instance: an old event
        # replayed to them would reach whichever instances run now, which is never what it meant.
        self.subscriptions = [s for s in subscriptions if not s.broadcast]
        self.broadcast = [s for s in subscriptions if s.broadcast]
        self.uow_factory = uow_factory

    async def peek(self, limit: int) -> list[UnroutedEvent]:
        return await self.unrouted.peek(limit)

    def consumers_of(self, event_type: str) -> list[str]:
        """The durable consumers of this deployment that take ``event_type``."""
        return _takers(self.subscriptions, event_type)

    def _why_kept(self, event_type: str) -> str:
        broadcast = _takers(self.broadcast, event_type)
        if broadcast:
            return (
                f"only a broadcast consumer ({', '.join(broadcast)}) takes {event_type!r}: it was meant for the "
                "instances running then, so discard it"
            )
        return f"no consumer of this deployment takes {event_type!r}"

    async def replay(
        self,
        event_ids: Sequence[UUID] | None,
        limit: int,
        on_published: Callable[[UnroutedEvent], None] | None = None,
    ) -> ReplayReport:
        """Publish again those of ``event_ids`` (all of them; or, without ids, up to ``limit``)
        that a consumer now takes, each removed from the unrouted events once its publish is
        confirmed. The ones no consumer takes are left, and do not count toward ``limit``.
        ``on_published`` hears of each confirmed publish as it happens (a run interrupted before
        its report can still say what reached the consumers)."""
        wanted = sorted(set(event_ids), key=str) if event_ids is not None else None
        await self._record(AuditAction.UNROUTED_REPLAY, wanted)
        await self.bus.connect(self.subscriptions)  # their queues and bindings, before any publish
        kept: list[Kept] = []
        published: set[UUID] = set()

        async def publish_again(event: UnroutedEvent) -> bool:
            if event.event_id in published:
                # A copy of an event this run published (two copies were kept, or the publish
                # went unrouted again): left for the next run, so a run never loops on one.
                return False
            if event.envelope is None:
                kept.append(Kept(event, "not an event Craig can read: discard it"))
                return False
            if not self.consumers_of(event.event_type):
                kept.append(Kept(event, self._why_kept(event.event_type)))
                return False
            await self.bus.publish(event.envelope)
            published.add(event.event_id)
            if on_published is not None:
                on_published(event)
            return True

        replayed = await self.unrouted.take(
            wanted, limit if wanted is None else UNROUTED_SCAN_MAX_EVENTS, publish_again
        )
        return ReplayReport(replayed, kept)

    async def discard(self, event_ids: Sequence[UUID]) -> list[UnroutedEvent]:
        """Remove the unrouted events of ``event_ids`` for good."""
        wanted = sorted(set(event_ids), key=str)
        await self._record(AuditAction.UNROUTED_DISCARD, wanted)

        async def remove(_event: UnroutedEvent) -> bool:
            return True

        return await self.unrouted.take(wanted, UNROUTED_SCAN_MAX_EVENTS, remove)  # every copy of each

    async def _record(self, action: AuditAction, wanted: list[UUID] | None) -> None:
        entry = operator_entry(
            action,
            UNROUTED_EVENT,
            EVERY_UNROUTED_EVENT if wanted is None else None,
            resource_ids=(wanted or [])[:AUDIT_MAX_RESOURCE_IDS],
        )
        await record_alone(self.uow_factory(), entry)


def _takers(subscriptions: Sequence[Subscription], event_type: str) -> list[str]:
    return [s.consumer for s in subscriptions if any(topic_matches(p, event_type) for p in s.event_types)]
