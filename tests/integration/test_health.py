"""What the API's probes say on real services: ``/health/ready`` needs only a reachable, migrated
PostgreSQL (RabbitMQ and the object store down are ``degraded``, still 200), ``/health/dependencies``
reports each one, and an API started without the broker reaches it once it is back."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from craig.adapters.postgres import migrations
from craig.entrypoints.container import Container, build_container
from craig.entrypoints.http.app import create_app
from craig.entrypoints.runtime import health_checks, running
from craig.entrypoints.settings import BrokerSettings, DatabaseSettings, ObjectStoreSettings, Profile, Settings
from tests.support.apps import live_server, make_settings
from tests.support.services import BrokerNames, free_port, scratch_database
from tests.support.silent_servers import FreezingProxy, freezing_proxy

pytestmark = pytest.mark.integration


def production(tmp_path: Path, database_url: str, broker_url: str, names: BrokerNames | None = None) -> Settings:
    """The production adapter set; the object store at a closed port on 127.0.0.1."""
    names = names or BrokerNames.unique()
    return attrs.evolve(
        make_settings("postgres", tmp_path, database_url),
        profile=Profile.PRODUCTION,
        database=DatabaseSettings(url=database_url),
        broker=BrokerSettings(
            url=broker_url,
            events_exchange=names.events_exchange,
            dlx_exchange=names.dlx_exchange,
            queue_prefix=names.queue_prefix,
        ),
        object_store=ObjectStoreSettings(
            endpoint=f"127.0.0.1:{free_port()}", access_key="nobody", secret_key="nothing", secure=False
        ),
    )


def closed_broker() -> str:
    return f"amqp://guest:guest@127.0.0.1:{free_port()}/"


@asynccontextmanager
async def api(container: Container) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(container, manage_runtime=False)
    async with live_server(app) as base, httpx.AsyncClient(base_url=base, timeout=30) as client:
        yield client


async def test_broker_and_object_store_down_leave_the_api_ready_but_degraded(tmp_path: Path, pg_url: str) -> None:
    container = build_container(production(tmp_path, pg_url, closed_broker()))
    async with running(container, tolerate=("object_store", "broker")), api(container) as client:
        ready = await client.get("/health/ready")
        assert ready.status_code == 200, ready.text
        body = ready.json()
        assert body["status"] == "degraded"
        assert body["dependencies"]["database"] == {"status": "up"}
        for name in ("broker", "object_store"):
            assert body["dependencies"][name]["status"] == "degraded"
            assert body["dependencies"][name]["error"]

        report = await client.get("/health/dependencies")
        assert report.status_code == 200
        dependencies = report.json()["dependencies"]
        assert report.json()["status"] == "degraded"
        assert set(dependencies) == {"database", "broker", "object_store"}
        assert dependencies["database"]["status"] == "up" and dependencies["database"]["required"] is True
        assert "error" not in dependencies["database"]
        assert dependencies["broker"]["required"] is False and "RabbitMQ" in dependencies["broker"]["error"]
        assert dependencies["object_store"]["required"] is False and dependencies["object_store"]["error"]
        assert all(0 <= d["seconds"] <= 5 for d in dependencies.values())


async def test_an_unreachable_database_is_not_ready(tmp_path: Path) -> None:
    container = build_container(
        production(tmp_path, f"postgresql://postgres@127.0.0.1:{free_port()}/craig", closed_broker())
    )
    async with api(container) as client:
        ready = await client.get("/health/ready")
        assert ready.status_code == 503
        assert ready.json()["status"] == "unavailable"
        assert ready.json()["dependencies"]["database"]["status"] == "down"
        report = await client.get("/health/dependencies")
        assert report.status_code == 200 and report.json()["dependencies"]["database"]["status"] == "down"
    await container.postgres().dispose()


async def test_an_unmigrated_database_is_not_ready(tmp_path: Path, pg_server_url: str) -> None:
    with scratch_database(pg_server_url) as url:
        container = build_container(production(tmp_path, url, closed_broker()))
        async with api(container) as client:
            ready = await client.get("/health/ready")
        await container.postgres().dispose()
    assert ready.status_code == 503
    database = ready.json()["dependencies"]["database"]
    assert database["status"] == "down"
    assert f"schema is at revision none but this Craig needs {migrations.head_revision()}" in database["error"]


def tcp_forwarder(port: int, target_port: int) -> AbstractAsyncContextManager[FreezingProxy]:
    """127.0.0.1:``port`` forwarded to 127.0.0.1:``target_port``: the dependency "comes back"."""
    return freezing_proxy(lambda: asyncio.open_connection("127.0.0.1", target_port), port)


async def test_a_broker_that_comes_back_is_reached_without_a_restart(
    tmp_path: Path, pg_url: str, rabbit_url: str, broker_names: BrokerNames
) -> None:
    port = free_port()
    rabbit = httpx.URL(rabbit_url)
    url = f"amqp://{rabbit.username}:{rabbit.password}@127.0.0.1:{port}/"
    broker_names.queue("dead-letters")  # deleted after the test
    container = build_container(production(tmp_path, pg_url, url, broker_names))
    check = health_checks(container)["broker"]
    async with running(container, tolerate=("object_store", "broker")):
        with pytest.raises(Exception, match="RabbitMQ"):
            await check()
        async with tcp_forwarder(port, rabbit.port or 5672):
            for _ in range(300):
                try:
                    await check()
                    break
                except Exception:
                    await asyncio.sleep(0.1)
            await check()  # reached: the background retry connected the bus


async def test_wrong_broker_credentials_are_still_refused(tmp_path: Path, pg_url: str, rabbit_url: str) -> None:
    from craig.entrypoints.runtime import StartupError

    rabbit = httpx.URL(rabbit_url)
    url = f"amqp://{rabbit.username}:not-the-password@127.0.0.1:{rabbit.port}/"
    container = build_container(production(tmp_path, pg_url, url))
    with pytest.raises(StartupError, match="ACCESS_REFUSED") as refused:
        async with running(container, tolerate=("object_store", "broker")):
            pass
    assert not refused.value.transient


@pytest.mark.s3
async def test_an_object_store_that_comes_back_is_prepared_without_a_restart(
    tmp_path: Path, pg_url: str, s3_server: Any
) -> None:
    port = free_port()
    bucket = f"t-{uuid.uuid4().hex[:12]}"
    settings = attrs.evolve(
        production(tmp_path, pg_url, closed_broker()),
        object_store=ObjectStoreSettings(
            endpoint=f"127.0.0.1:{port}",
            access_key=s3_server.access_key,
            secret_key=s3_server.secret_key,
            bucket=bucket,
            secure=False,
        ),
    )
    container = build_container(settings)
    check = health_checks(container)["object_store"]
    client = s3_server.client()
    try:
        async with running(container, tolerate=("object_store", "broker")):
            with pytest.raises(Exception, match="S3"):
                await check()
            async with tcp_forwarder(port, int(s3_server.endpoint.rsplit(":", 1)[1])):
                for _ in range(300):
                    try:
                        await check()
                        break
                    except Exception:
                        await asyncio.sleep(0.1)
                await check()  # the background retry created the bucket
            assert client.bucket_exists(bucket)
    finally:
        if client.bucket_exists(bucket):
            client.remove_bucket(bucket)
