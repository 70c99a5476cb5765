"""The service fixtures work against the real servers."""

from __future__ import annotations

import io
from collections.abc import Iterator

import aio_pika
import asyncpg
import pytest
from minio import Minio
from minio.error import S3Error
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.support.services import BrokerNames, SeaweedS3, database_from_template

pytestmark = pytest.mark.integration


@pytest.mark.postgres
async def test_pg_url_answers_with_asyncpg_and_sqlalchemy(pg_url: str) -> None:
    conn = await asyncpg.connect(pg_url)
    try:
        assert "PostgreSQL" in await conn.fetchval("SELECT version()")
        assert (await conn.fetchval("SELECT current_database()")).startswith("t_")
        # copied from the migrated template
        assert await conn.fetchval("SELECT count(*) FROM alembic_version") == 1
    finally:
        await conn.close()

    engine = create_async_engine(pg_url.replace("postgresql://", "postgresql+asyncpg://", 1))
    try:
        async with engine.connect() as sa_conn:
            assert (await sa_conn.execute(text("SELECT 1"))).scalar_one() == 1
    finally:
        await engine.dispose()


@pytest.fixture
def other_pg_url(pg_server_url: str, pg_template: str) -> Iterator[str]:
    """A second database like ``pg_url`` in the same test."""
    with database_from_template(pg_server_url, pg_template) as url:
        yield url


@pytest.mark.postgres
async def test_pg_url_databases_are_isolated(pg_url: str, other_pg_url: str) -> None:
    assert pg_url != other_pg_url
    first = await asyncpg.connect(pg_url)
    second = await asyncpg.connect(other_pg_url)
    try:
        await first.execute("CREATE TABLE isolation_probe (v int)")
        await first.execute("INSERT INTO isolation_probe VALUES (1)")
        assert await first.fetchval("SELECT count(*) FROM isolation_probe") == 1
        with pytest.raises(asyncpg.UndefinedTableError):
            await second.fetchval("SELECT count(*) FROM isolation_probe")
    finally:
        await first.close()
        await second.close()


@pytest.mark.rabbit
async def test_rabbit_publish_and_get_on_the_unique_exchange(rabbit_url: str, broker_names: BrokerNames) -> None:
    connection = await aio_pika.connect(rabbit_url)
    async with connection:
        channel = await connection.channel()
        exchange = await channel.declare_exchange(broker_names.events_exchange, aio_pika.ExchangeType.TOPIC)
        queue = await channel.declare_queue(broker_names.queue("probe"))
        await queue.bind(exchange, routing_key="case.#")
        await exchange.publish(aio_pika.Message(b"hello", message_id="m-1"), routing_key="case.opened")
        message = await queue.get(timeout=5, fail=True)
        assert message is not None
        await message.ack()
        assert message.body == b"hello"
        assert message.message_id == "m-1"
        assert await queue.get(fail=False) is None


@pytest.mark.s3
def test_s3_put_stat_and_missing_key(s3_server: SeaweedS3, s3_bucket: str) -> None:
    client = Minio(s3_server.endpoint, access_key=s3_server.access_key, secret_key=s3_server.secret_key, secure=False)
    data = b"attachment bytes"
    client.put_object(s3_bucket, "cases/1/a.txt", io.BytesIO(data), len(data), content_type="text/plain")
    stat = client.stat_object(s3_bucket, "cases/1/a.txt")
    assert stat.size == len(data)
    assert client.get_object(s3_bucket, "cases/1/a.txt").read() == data
    with pytest.raises(S3Error) as missing:
        client.stat_object(s3_bucket, "cases/1/missing.txt")
    assert missing.value.code in {"NoSuchKey", "NoSuchObject"}
