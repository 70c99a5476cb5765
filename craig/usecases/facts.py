"""Staging the facts a pure decision returns, as events in the caller's transaction."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from craig.domain.facts import Fact
from craig.ports.outbox import HasOutbox
from craig.usecases.events import new_event, stage_events


async def stage_facts(uow: HasOutbox, source: str, facts: Iterable[Fact], now: datetime) -> None:
    """Nothing is published unless the caller's transaction commits."""
    envelopes = [
        new_event(
            source=source,
            type=fact.type,
            aggregate_type=fact.aggregate_type,
            aggregate_id=fact.aggregate_id,
            payload=fact.payload,
            now=now,
        )
        for fact in facts
    ]
    if envelopes:
        await stage_events(uow, envelopes)
