"""Staging the facts a pure decision returns, as events in the caller's transaction."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from craig.domain.event_catalogue import BY_NAME
from craig.domain.facts import Fact
from craig.ports.outbox import HasOutbox
from craig.usecases.events import new_event, stage_events


async def stage_facts(uow: HasOutbox, facts: Iterable[Fact], now: datetime) -> None:
    """Each fact as its catalogued event (:mod:`craig.domain.event_catalogue`, which names its
    source); nothing is published unless the caller's transaction commits."""
    envelopes = []
    for fact in facts:
        event = BY_NAME[fact.type]
        if event.aggregate_type != fact.aggregate_type:
            raise ValueError(f"{fact.type} is an event of a {event.aggregate_type}, not of a {fact.aggregate_type}")
        envelopes.append(new_event(event, aggregate_id=fact.aggregate_id, payload=fact.payload, now=now))
    if envelopes:
        await stage_events(uow, envelopes)
