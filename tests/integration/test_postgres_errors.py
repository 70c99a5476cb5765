"""The PostgreSQL adapter's error translation, on real server errors: only connection and
availability failures are ``DatabaseUnavailable`` (503); a statement the server refuses for
good is a ``DatabaseDefect`` (500)."""

from __future__ import annotations

import asyncio
import traceback
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from craig.adapters.postgres.database import PostgresDatabase
from craig.ports.errors import DatabaseDefect, DatabaseUnavailable, InvalidData, PortError
from tests.support.services import admin_sql, free_port, quote_ident, with_database
from tests.support.silent_servers import freezing_postgres, tcp_server

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
        # the server's own words for "too many connections" and "connection failure", as a pooler
        # or a proxy in front of PostgreSQL answers them
        ["DO $$ BEGIN RAISE EXCEPTION 'too many' USING ERRCODE = '53300'; END $$"],
        ["DO $$ BEGIN RAISE EXCEPTION 'link down' USING ERRCODE = '08006'; END $$"],
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
    database = PostgresDatabase(pg_url, pool_size=1, max_overflow=0, acquire_timeout_seconds=0.1)
    try:
        async with database.connect():
            with pytest.raises(DatabaseUnavailable, match="all 1 of this process's connections stayed busy"):
                async with database.connect():
                    pass
    finally:
        await database.dispose()


async def test_a_server_that_never_answers_is_named_as_such_not_as_a_busy_pool() -> None:
    """A server that accepts and never answers held the acquire to its timeout, and the
    message blamed the pool's size, which sent the operator to the wrong knob."""
    async with tcp_server() as silent:
        database = PostgresDatabase(f"postgresql://postgres@127.0.0.1:{silent.port}/craig", acquire_timeout_seconds=0.2)
        try:
            with pytest.raises(DatabaseUnavailable, match=r"the database did not answer within 0\.2 s"):
                await database.ping()
        finally:
            await database.dispose()


# --- configuration: a role or database that is not (yet) there ---------------------------------
# Both are 503, not 500: they concern the connection, not the statement, so the request itself
# was fine and succeeds unchanged once an operator fixes the role, the password or the database
# (or a restore finishes): the same pool recovers without a restart, as these tests show.


async def test_a_refused_role_is_unavailable_until_the_operator_creates_it(pg_url: str) -> None:
    role = f"craig_missing_{uuid.uuid4().hex[:8]}"
    database = PostgresDatabase(make_url(pg_url).set(username=role).render_as_string(hide_password=False))
    try:
        with pytest.raises(DatabaseUnavailable) as refused:
            await database.ping()
        assert _sqlstate_of(refused.value) == "28000"  # invalid_authorization_specification
        admin_sql(pg_url, f"CREATE ROLE {quote_ident(role)} LOGIN")
        await database.ping()  # the same pool, once the operator fixed it
    finally:
        await database.dispose()
        admin_sql(pg_url, f"DROP ROLE IF EXISTS {quote_ident(role)}")


async def test_a_missing_database_is_unavailable_until_it_exists(pg_url: str) -> None:
    name = f"craig_missing_{uuid.uuid4().hex[:8]}"
    database = PostgresDatabase(with_database(pg_url, name))
    try:
        with pytest.raises(DatabaseUnavailable) as refused:
            await database.ping()
        assert _sqlstate_of(refused.value) == "3D000"  # invalid_catalog_name
        admin_sql(pg_url, f"CREATE DATABASE {quote_ident(name)}")
        await database.ping()
    finally:
        await database.dispose()
        admin_sql(pg_url, f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)")


def _sqlstate_of(error: BaseException) -> str | None:
    seen: BaseException | None = error
    while seen is not None:
        code = getattr(seen, "sqlstate", None) or getattr(getattr(seen, "orig", None), "sqlstate", None)
        if code:
            return str(code)
        seen = seen.__cause__
    return None


async def test_an_error_never_carries_the_statements_parameters(database: PostgresDatabase) -> None:
    """A statement's parameters (a case's title, a summary) are personal data: the error of a
    statement that fails, its text and its causes, never quote them, and the port error leaves
    out the DETAIL line in which the server quotes the row's key."""
    case_id, secret = uuid.uuid4(), "-".join(["JANE", "DOE", uuid.uuid4().hex])  # not in this source
    insert = text("INSERT INTO cases (id, title, opened_at, created_by) VALUES (:id, :title, now(), :by)")
    async with database.transaction() as conn:
        await conn.execute(insert, {"id": case_id, "title": "first", "by": uuid.uuid4()})
    with pytest.raises(PortError) as caught:
        async with database.transaction() as conn:
            await conn.execute(insert, {"id": case_id, "title": secret, "by": uuid.uuid4()})
    told = "".join(traceback.format_exception(caught.value))
    assert "cases_pkey" in told and secret not in told
    assert str(case_id) not in str(caught.value)  # the DETAIL line (Key (id)=(...)) is left out


@pytest.mark.parametrize(
    ("cast", "wrong"),
    [
        ("CAST(CAST(:value AS text) AS int)", "server"),  # PostgreSQL quotes the text it cannot read
        ("CAST(:value AS int)", "driver"),  # asyncpg quotes what it cannot encode
    ],
)
async def test_a_bad_value_is_never_quoted_in_the_error(database: PostgresDatabase, cast: str, wrong: str) -> None:
    """Refused by the ``wrong`` side, the value does not reach the error's text or its causes."""
    secret = "-".join(["JANE", uuid.uuid4().hex[:8]])  # text where an int is expected (short: asyncpg cuts long ones)
    with pytest.raises(InvalidData) as caught:
        async with database.transaction() as conn:
            await conn.execute(text(f"SELECT {cast}"), {"value": secret})
    told = "".join(traceback.format_exception(caught.value))
    assert secret not in told, told
    assert "invalid input" in str(caught.value) and "(value not shown)" in str(caught.value)  # what was wrong, not what


async def test_a_statement_outside_the_pool_keeps_a_bad_value_out_of_the_error_too(database: PostgresDatabase) -> None:
    """The worker loops' own connections (``db_errors``) translate as the pool's do."""
    from craig.adapters.postgres.errors import db_errors

    secret = "-".join(["JANE", uuid.uuid4().hex[:8]])
    conn = await database.connect_raw()
    try:
        with pytest.raises(InvalidData) as caught:
            async with db_errors():
                await conn.fetchval("SELECT CAST(CAST($1 AS text) AS int)", secret)
    finally:
        await conn.close()
    told = "".join(traceback.format_exception(caught.value))
    assert secret not in told, told


async def test_a_statement_cancelled_on_a_server_that_stopped_answering_costs_its_caller_a_bounded_wait(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller cancelled during a statement (a readiness check's timeout, a shutdown) gives its
    connection back, and asyncpg first waits for the server to acknowledge the cancel: from a
    server that stopped answering, forever. The probe, the metrics scrape and a stopping worker
    hung behind it. The wait is now bounded (``DATABASE_RELEASE_TIMEOUT``, 0.5 s here) and the
    connection closed; once the server answers again the pool opens a fresh one."""
    import craig.adapters.postgres.database as database_module

    monkeypatch.setattr(database_module, "DATABASE_RELEASE_TIMEOUT", timedelta(seconds=0.5))
    async with freezing_postgres(pg_url) as (proxy, url):
        database = PostgresDatabase(url, pool_size=2)
        try:
            await database.ping()  # a connection in the pool, as after a few requests
            proxy.freeze()
            check = asyncio.create_task(asyncio.wait_for(database.ping(), 0.2))
            # A guard against hanging the suite, not a measurement: the check ends after about
            # 0.7 s; before the bound it ended only when the server answered again.
            done, _ = await asyncio.wait({check}, timeout=60)
            assert check in done, "the cancelled check is still waiting to give its connection back"
            with pytest.raises(TimeoutError):
                check.result()
            proxy.thaw()
            await database.ping()
        finally:
            proxy.thaw()
            await database.dispose()
