"""Shared fixtures: Hypothesis profiles and the real servers the integration tests use.

Session fixtures are sync (they start servers in subprocesses), so they do not depend on
pytest-asyncio's function-scoped event loops. Database work inside sync fixtures runs
``asyncio.run`` on a helper thread, which works whether or not a loop is running.

- ``pg_server_url``: embedded PostgreSQL 18, or ``CRAIG_TEST_DATABASE_URL`` when set.
- ``pg_template`` / ``pg_url``: a migrated template database; each test gets a copy.
- ``rabbit_url`` / ``broker_names``: the broker on 127.0.0.1:5672 (``scripts/ensure-rabbitmq.sh``)
  and per-test exchange/queue names.
- ``s3_server`` / ``s3_bucket``: SeaweedFS S3 on a free port; a fresh bucket per test.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from minio.deleteobjects import DeleteObject

from craig.adapters.postgres.embedded import EmbeddedPostgres
from tests.support.services import (
    BrokerNames,
    SeaweedS3,
    admin_sql,
    database_from_template,
    postgres_for_tests,
    quote_ident,
    rabbit_available,
    run_async,
    with_database,
)

settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

RABBIT_URL = "amqp://guest:guest@127.0.0.1:5672/"


# -- PostgreSQL -------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """URL of a PostgreSQL server's ``postgres`` database (superuser ``postgres``).

    Its data dir is a private temporary folder of this session, not pytest's ``tmp_path``: pytest
    resets the mode of its own base folder and prunes old ones, which concurrent sessions would
    do under a running server's feet."""
    root = Path(tempfile.mkdtemp(prefix="craig-test-pg-"))
    root.chmod(0o755)
    url, stop = postgres_for_tests(root)
    try:
        yield url
    finally:
        stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _no_socket_folders_left(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Embedded servers that tests start in their ``tmp_path`` (through ``craig`` commands) keep
    their socket in a folder under /tmp when that path is too long for it, and keep the folder
    across restarts; once the session is over, those its servers left empty are removed."""
    yield
    for version in tmp_path_factory.getbasetemp().rglob("PG_VERSION"):
        if (version.parent / "global").is_dir():  # a data directory, not one of its databases
            EmbeddedPostgres(version.parent).remove_socket_dir()


@pytest.fixture(scope="session")
def pg_template(pg_server_url: str) -> Iterator[str]:
    """Name of a database migrated to head, used as the template of every ``pg_url`` database."""
    from craig.adapters.postgres.migrations import upgrade_to_head

    name = f"craig_template_{uuid.uuid4().hex[:12]}"
    admin_sql(pg_server_url, f"CREATE DATABASE {quote_ident(name)}")
    try:
        # Alembic's env.py calls asyncio.run: keep it off any thread that might run a loop.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(upgrade_to_head, with_database(pg_server_url, name)).result()
        # CREATE DATABASE … TEMPLATE fails while anyone is connected to the template.
        admin_sql(
            pg_server_url,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{name}' AND pid <> pg_backend_pid()",
        )
        yield name
    finally:
        admin_sql(pg_server_url, f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)")


@pytest.fixture
def pg_url(pg_server_url: str, pg_template: str) -> Iterator[str]:
    """URL of a fresh, migrated database of this test's own; dropped afterwards."""
    with database_from_template(pg_server_url, pg_template) as url:
        yield url


# -- RabbitMQ ---------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def rabbit_url() -> str:
    """AMQP URL of the broker on 127.0.0.1:5672 (guest/guest)."""
    if not rabbit_available():
        pytest.fail(
            "RabbitMQ does not answer on 127.0.0.1:5672. Fix: run scripts/ensure-rabbitmq.sh "
            "(`make test` runs it before pytest).",
            pytrace=False,
        )
    return RABBIT_URL


def _delete_broker_objects(url: str, names: BrokerNames) -> None:
    import aio_pika

    async def run() -> None:
        connection = await aio_pika.connect(url, timeout=5)
        async with connection:
            for kind, name in [
                *(("queue", q) for q in names.queues),
                ("queue", names.unrouted_queue),
                ("exchange", names.events_exchange),
                ("exchange", names.dlx_exchange),
                ("exchange", names.unrouted_exchange),
            ]:
                channel = await connection.channel()  # a failed delete closes its channel
                try:
                    if kind == "queue":
                        await channel.queue_delete(name)
                    else:
                        await channel.exchange_delete(name)
                except (TimeoutError, aio_pika.exceptions.AMQPError):
                    pass
                finally:
                    if not channel.is_closed:
                        await channel.close()

    run_async(run)


@pytest.fixture
def broker_names(rabbit_url: str) -> Iterator[BrokerNames]:
    """Per-test exchange/queue names; the exchanges and registered queues are deleted afterwards."""
    names = BrokerNames.unique()
    yield names
    _delete_broker_objects(rabbit_url, names)


# -- S3 ---------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def s3_server() -> Iterator[SeaweedS3]:
    """A SeaweedFS S3 gateway on a free 127.0.0.1 port (``endpoint``, ``access_key``, ``secret_key``)."""
    root = Path(tempfile.mkdtemp(prefix="craig-test-s3-"))
    server = SeaweedS3(root)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def s3_bucket(s3_server: SeaweedS3) -> Iterator[str]:
    """A new empty bucket; emptied and removed afterwards."""
    client = s3_server.client()
    name = f"t-{uuid.uuid4().hex[:12]}"
    client.make_bucket(name)
    try:
        yield name
    finally:
        doomed = [
            DeleteObject(o.object_name) for o in client.list_objects(name, recursive=True) if o.object_name is not None
        ]
        errors = list(client.remove_objects(name, doomed)) if doomed else []
        if errors:
            raise RuntimeError(f"could not empty bucket {name}: {errors}")
        client.remove_bucket(name)
