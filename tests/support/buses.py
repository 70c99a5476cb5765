"""Containers whose event bus is the in-process bus (memory or PostgreSQL inbox) or RabbitMQ."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from dependency_injector import providers

from craig.adapters.rabbit.bus import RabbitEventBus
from craig.adapters.rabbit.dead_letters import RabbitDeadLetters
from craig.adapters.rabbit.unrouted import RabbitUnroutedEvents
from craig.entrypoints.container import Container
from craig.entrypoints.runtime import running
from craig.entrypoints.settings import InboxSettings, OutboxSettings
from tests.support.apps import make_container, make_settings

FAST_RETRIES = InboxSettings(backoff_base_seconds=0.05, backoff_cap_seconds=0.2)
BUS_KINDS = ["memory", "postgres", "rabbit"]


def rabbit_bus(url: str, names: object, instance: str = "test") -> RabbitEventBus:
    return RabbitEventBus(
        url,
        events_exchange=names.events_exchange,  # type: ignore[attr-defined]
        dlx_exchange=names.dlx_exchange,  # type: ignore[attr-defined]
        queue_prefix=names.queue_prefix,  # type: ignore[attr-defined]
        instance_id=instance,
    )


@asynccontextmanager
async def bus_container(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, **sections: object
) -> AsyncIterator[Container]:
    """A running container of ``kind`` (memory / postgres / rabbit), fast retries unless ``sections``
    say otherwise."""
    pg_url = request.getfixturevalue("pg_url") if kind != "memory" else None
    sections = {"inbox": FAST_RETRIES, "outbox": OutboxSettings(poll_interval_seconds=0.2), **sections}
    settings = make_settings("memory" if kind == "memory" else "postgres", tmp_path, pg_url, **sections)
    container = make_container(settings)
    if kind == "rabbit":
        names = request.getfixturevalue("broker_names")
        bus = rabbit_bus(request.getfixturevalue("rabbit_url"), names)
        container.event_bus.override(providers.Object(bus))
        container.dead_letters.override(providers.Object(RabbitDeadLetters(bus)))
        container.unrouted_events.override(providers.Object(RabbitUnroutedEvents(bus)))
        for suffix in ("dead-letters",):
            names.queues.append(f"{names.queue_prefix}.{suffix}")
    async with running(container):
        yield container
