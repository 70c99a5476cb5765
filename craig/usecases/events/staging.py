"""Making and staging events: ``new_event`` and ``stage_event``.

An event is made from its entry in the catalogue (:mod:`craig.domain.event_catalogue`), which
gives it its type, source and aggregate type; the use case gives the aggregate's id and the
payload the catalogue lists.

Use cases leave ``correlation_id`` empty (unless the event has an id of its own to carry, as an
exchange outcome carries its job's): the outbox writer stamps it with the ``X-Request-ID`` of the
request being handled, and the event with the current trace context, when it stores the event
(:mod:`craig.adapters.telemetry` says why the adapter, at staging time, is the seam).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from craig.domain.event_catalogue import EventType
from craig.domain.events import EventEnvelope
from craig.ports.outbox import HasOutbox
from craig.usecases.ids import new_id


def new_event(
    event: EventType,
    *,
    aggregate_id: UUID | str,
    payload: Mapping[str, Any],
    now: datetime,
    correlation_id: UUID | str | None = None,
    causation_id: UUID | None = None,
    traceparent: str | None = None,
) -> EventEnvelope:
    return EventEnvelope(
        id=new_id(),
        source=event.source,
        type=event.name,
        occurred_at=now,
        payload=dict(payload),
        aggregate_type=event.aggregate_type,
        aggregate_id=str(aggregate_id),
        correlation_id=correlation_id,
        causation_id=causation_id,
        traceparent=traceparent,
    )


async def stage_event(uow: HasOutbox, envelope: EventEnvelope) -> None:
    """Insert the event in the caller's transaction: nothing is published unless it commits."""
    await uow.outbox.stage(envelope)


async def stage_events(uow: HasOutbox, envelopes: Sequence[EventEnvelope]) -> None:
    """Several events in one statement, in this order; same guarantee as :func:`stage_event`."""
    await uow.outbox.stage_many(envelopes)
