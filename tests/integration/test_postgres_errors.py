"""The PostgreSQL adapter's error translation, on real server errors: only connection and
availability failures are ``DatabaseUnavailable`` (503); a statement the server refuses for
good is a ``DatabaseDefect`` (500)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from craig.adapters.postgres.database import PostgresDatabase
from craig.ports.errors import DatabaseDefect, DatabaseUnavailable, InvalidData, PortError
from tests.support.services import free_port

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


@pytest.fixture
async def database(pg_url: str) -> AsyncIterator[PostgresDatabase]:
    database = PostgresDatabase(pg_url, pool_size=2)
    try:
        yield database
    finally:
        await database.dispose()


async def _error_of(database: PostgresDatabase, *statements: str) -> PortError:
    with pytest.raises(PortError) as caught:
        async with database.transaction() as conn:
            for statement in statements:
                await conn.execute(text(statement))
    return caught.value


@pytest.mark.parametrize(
    ("statements", "sqlstate"),
    [
        (["SELECT no_such_column FROM cases"], "42703"),
        (["SELECT 1 FROM no_such_table"], "42P01"),
        (["SELEC 1"], "42601"),
        (["SELECT no_such_function()"], "42883"),
        (["DO $$ BEGIN RAISE EXCEPTION 'a bug in a function'; END $$"], "P0001"),
    ],
)
async def test_a_statement_refused_for_good_is_a_defect(
    database: PostgresDatabase, statements: list[str], sqlstate: str
) -> None:
    error = await _error_of(database, *statements)
    assert type(error) is DatabaseDefect, error
    assert f"SQLSTATE {sqlstate}" in str(error)


@pytest.mark.parametrize(
    "statements",
    [
        ["SET LOCAL statement_timeout = 50", "SELECT pg_sleep(30)"],  # 57014 query_canceled
        ["SELECT pg_terminate_backend(pg_backend_pid())"],  # 57P01 admin_shutdown, connection gone
        ["SET TRANSACTION READ ONLY", "CREATE TABLE t_read_only (id int)"],  # 25006, as on a standby
    ],
)
async def test_availability_failures_are_unavailable(database: PostgresDatabase, statements: list[str]) -> None:
    assert isinstance(await _error_of(database, *statements), DatabaseUnavailable)
    await database.ping()  # the pool recovers


async def test_an_unreachable_server_is_unavailable() -> None:
    database = PostgresDatabase(f"postgresql://postgres@127.0.0.1:{free_port()}/craig")
    try:
        with pytest.raises(DatabaseUnavailable):
            await database.ping()
    finally:
        await database.dispose()


async def test_a_bad_value_stays_invalid_data(database: PostgresDatabase) -> None:
    assert isinstance(await _error_of(database, "SELECT 'not a number'::int"), InvalidData)


async def test_an_exhausted_pool_is_unavailable(pg_url: str) -> None:
    database = PostgresDatabase(pg_url, pool_size=1, max_overflow=0)
    database.engine.pool._timeout = 0.1  # type: ignore[attr-defined]  # no free connection: give up at once
    try:
        async with database.connect():
            with pytest.raises(DatabaseUnavailable):
                async with database.connect():
                    pass
    finally:
        await database.dispose()
