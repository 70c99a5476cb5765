"""Rules cache invalidation across instances.

Two app instances share one PostgreSQL and one RabbitMQ. Each keeps its own decision cache.
After a rule set is created on A, B answers with the new version within one second: the
``rules.cache_invalidated`` event travels outbox -> relay -> broker -> B's broadcast queue.
An invalidation B misses while its broker connection is down does not leave it stale: B drops
its cache when it reconnects.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from dependency_injector import providers
from sqlalchemy import text

from craig.domain.access import Role
from craig.entrypoints.container import Container
from craig.entrypoints.http.app import create_app
from craig.entrypoints.settings import OutboxSettings, RulesSettings
from craig.entrypoints.workers.messaging import relay_loop
from craig.entrypoints.workers.runner import workers_running
from tests.support import apps
from tests.support.apps import auth, live_server
from tests.support.buses import rabbit_bus
from tests.support.services import BrokerNames, queue_exists

pytestmark = [pytest.mark.integration, pytest.mark.rabbit]

DEADLINE_SECONDS = 1.0


def rules(decision: str) -> list[dict[str, Any]]:
    return [{"when": {"all": []}, "then": decision}]


@asynccontextmanager
async def instance(
    name: str, tmp_path: Path, pg_url: str, rabbit_url: str, names: BrokerNames, **sections: Any
) -> AsyncIterator[tuple[Container, httpx.AsyncClient]]:
    settings = apps.make_settings(
        "postgres",
        tmp_path / name,
        pg_url,
        instance_id=name,
        outbox=OutboxSettings(poll_interval_seconds=0.1),
        **sections,
    )
    container = apps.make_container(settings)
    container.event_bus.override(providers.Object(rabbit_bus(rabbit_url, names, instance=name)))
    names.queues.append(f"{names.queue_prefix}.rules-cache.{name}")
    names.queue("dead-letters")  # deleted after the test (the retry queues expire by themselves)
    app = create_app(container, lifespans=[lambda _app: workers_running(container, loops=[relay_loop(container)])])
    async with live_server(app) as base, httpx.AsyncClient(base_url=base, timeout=30) as client:
        yield container, client


async def version_seen(client: httpx.AsyncClient, headers: dict[str, str]) -> tuple[int, str]:
    answer = await client.post("/v1/rule-sets/triage/evaluate", json={"facts": {}}, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()["version"], answer.json()["decision"]


async def wait_for_version(client: httpx.AsyncClient, headers: dict[str, str], version: int) -> float:
    started = time.monotonic()
    while time.monotonic() - started < DEADLINE_SECONDS:
        if (await version_seen(client, headers))[0] == version:
            elapsed = time.monotonic() - started
            print(f"version {version} seen by the other instance after {elapsed * 1000:.0f} ms")
            return elapsed
        await asyncio.sleep(0.02)
    pytest.fail(f"the other instance still evaluates an old version {DEADLINE_SECONDS} s after the create")


async def test_a_create_on_a_reaches_b_within_a_second(
    tmp_path: Path, pg_url: str, rabbit_url: str, broker_names: BrokerNames
) -> None:
    async with AsyncExitStack() as stack:
        a, client_a = await stack.enter_async_context(
            instance("instance-a", tmp_path, pg_url, rabbit_url, broker_names)
        )
        b, client_b = await stack.enter_async_context(
            instance("instance-b", tmp_path, pg_url, rabbit_url, broker_names)
        )
        sup_a, sup_b = auth(a, role=Role.SUPERVISOR), auth(b, role=Role.SUPERVISOR)

        first = await client_a.post("/v1/rule-sets", json={"name": "triage", "rules": rules("v1")}, headers=sup_a)
        assert first.status_code == 201
        assert await version_seen(client_b, sup_b) == (1, "v1")  # now cached on B
        await asyncio.sleep(0.3)  # let v1's own invalidation pass, so B holds v1 in its cache
        assert await version_seen(client_b, sup_b) == (1, "v1")
        assert b.rule_cache().get("triage") is not None

        second = await client_a.post("/v1/rule-sets", json={"name": "triage", "rules": rules("v2")}, headers=sup_a)
        assert second.status_code == 201 and second.json()["version"] == 2
        assert a.rule_cache().get("triage").version == 2  # type: ignore[union-attr]  # its own insert
        await wait_for_version(client_b, sup_b, 2)
        assert await version_seen(client_b, sup_b) == (2, "v2")

        # and the other way round; each instance ignores its own event
        third = await client_b.post("/v1/rule-sets", json={"name": "triage", "rules": rules("v3")}, headers=sup_b)
        assert third.status_code == 201
        await wait_for_version(client_a, sup_a, 3)
        await asyncio.sleep(0.3)
        assert b.rule_cache().get("triage").version == 3  # type: ignore[union-attr]


async def _invalidations_published(container: Container) -> int:
    async with container.postgres().connect() as conn:
        result = await conn.execute(
            text(
                "SELECT count(*) FROM event_outbox"
                " WHERE event_type = 'rules.cache_invalidated' AND published_at IS NOT NULL"
            )
        )
        return int(result.scalar_one())


async def _until(check: Callable[[], Awaitable[bool]], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"never happened: {what}")
        await asyncio.sleep(0.05)


async def test_an_instance_whose_connection_was_cut_drops_its_cache_when_it_reconnects(
    tmp_path: Path, pg_url: str, rabbit_url: str, broker_names: BrokerNames
) -> None:
    async with AsyncExitStack() as stack:
        a, client_a = await stack.enter_async_context(
            instance("instance-a", tmp_path, pg_url, rabbit_url, broker_names)
        )
        b, client_b = await stack.enter_async_context(  # no help from the maximum age here
            instance("instance-b", tmp_path, pg_url, rabbit_url, broker_names, rules=RulesSettings(3600))
        )
        sup_a, sup_b = auth(a, role=Role.SUPERVISOR), auth(b, role=Role.SUPERVISOR)
        first = await client_a.post("/v1/rule-sets", json={"name": "triage", "rules": rules("v1")}, headers=sup_a)
        assert first.status_code == 201
        await _until(lambda: _count_is(a, 1), "v1's invalidation published")
        assert await version_seen(client_b, sup_b) == (1, "v1")  # cached on B
        await asyncio.sleep(0.3)
        assert b.rule_cache().get("triage") is not None

        # The network between B and RabbitMQ fails: B's broadcast queue goes with its connection.
        connection = b.event_bus().broker._connection
        assert connection is not None
        await connection.transport.connection.close(ConnectionError("network cut by the test"))
        queue = f"{broker_names.queue_prefix}.rules-cache.instance-b"
        await _until(lambda: _gone(rabbit_url, queue), "B's broadcast queue deleted")

        second = await client_a.post("/v1/rule-sets", json={"name": "triage", "rules": rules("v2")}, headers=sup_a)
        assert second.status_code == 201
        await _until(lambda: _count_is(a, 2), "v2's invalidation published (to A's queue only)")
        assert not connection.connected.is_set(), "B reconnected too soon: the test proves nothing"
        assert await version_seen(client_b, sup_b) == (1, "v1")  # B missed the event

        await _until(lambda: queue_exists(rabbit_url, queue), "B reconnected and declared its queue again")
        await _until(lambda: _sees(client_b, sup_b, 2), "B answers with version 2 after reconnecting")


async def _count_is(container: Container, n: int) -> bool:
    return await _invalidations_published(container) == n


async def _gone(rabbit_url: str, queue: str) -> bool:
    return not await queue_exists(rabbit_url, queue)


async def _sees(client: httpx.AsyncClient, headers: dict[str, str], version: int) -> bool:
    return (await version_seen(client, headers))[0] == version
