"""The driver (SQLAlchemy compiles, asyncpg runs) on a real PostgreSQL: the values the server
receives are the ones SQLAlchemy's own engine sends, and the pool's transactions, savepoints and
broken connections behave as the unit of work relies on."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import bindparam, exc, text
from sqlalchemy.dialects.postgresql import ARRAY, BYTEA, JSONB, TEXT
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.ext.asyncio import create_async_engine

from craig.adapters.postgres import driver
from craig.adapters.postgres.database import PostgresDatabase, async_url
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.ports.errors import DatabaseDefect, DatabaseUnavailable, InvalidData
from tests.support.ciphers import TEST_CIPHER

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

#: One statement that takes every kind of value Craig binds, untyped and typed.
ECHO = text(
    """
    SELECT CAST(:plain AS text) AS plain, CAST(:number AS int) AS number, :document AS document,
           :ids AS ids, :names AS names, :blob AS blob, CAST(:plain AS text) AS again,
           CAST(:missing_is_null AS text) AS nothing
    """
).bindparams(
    bindparam("document", type_=JSONB),
    bindparam("ids", type_=ARRAY(PG_UUID(as_uuid=True))),
    bindparam("names", type_=ARRAY(TEXT)),
    bindparam("blob", type_=BYTEA),
)
VALUES: dict[str, Any] = {
    "plain": "Doe",
    "number": 7,
    "document": {"a": [1, "two", None], "b": {"c": True}},
    "ids": [uuid.UUID(int=1), uuid.UUID(int=2)],
    "names": ["x", "y"],
    "blob": b"\x00\xffbytes",
    "missing_is_null": None,
}


@pytest.fixture
async def database(pg_url: str) -> AsyncIterator[PostgresDatabase]:
    database = PostgresDatabase(pg_url, pool_size=3, max_overflow=0)
    try:
        yield database
    finally:
        await database.dispose()


async def test_values_reach_the_server_as_sqlalchemys_engine_sends_them(
    database: PostgresDatabase, pg_url: str
) -> None:
    engine = create_async_engine(async_url(pg_url))
    try:
        async with engine.connect() as conn:
            expected = dict((await conn.execute(ECHO, VALUES)).mappings().one())
    finally:
        await engine.dispose()
    async with database.transaction() as conn:
        row = (await conn.execute(ECHO, VALUES)).one()
    assert dict(row) == expected
    assert row.document == VALUES["document"] and row["ids"] == VALUES["ids"] and row[5] == VALUES["blob"]
    assert row.again == "Doe" and row.nothing is None  # a repeated and a None parameter
    # JSONB None is JSON null, as SQLAlchemy sends it (not SQL NULL)
    async with database.transaction() as conn:
        stored = await conn.execute(text("SELECT :d IS NULL, :d").bindparams(bindparam("d", type_=JSONB)), {"d": None})
        assert tuple(stored.one()) == (False, None)


async def test_a_missing_parameter_is_refused_never_null(database: PostgresDatabase) -> None:
    async with database.transaction() as conn:
        with pytest.raises(exc.ArgumentError, match="plain"):
            await conn.execute(ECHO, {k: v for k, v in VALUES.items() if k != "plain"})


async def test_a_value_bound_to_the_statement_is_its_own(database: PostgresDatabase) -> None:
    base = text("SELECT CAST(:a AS int) + CAST(:b AS int)")
    five, six = base.bindparams(a=2), base.bindparams(a=3)
    async with database.transaction() as conn:
        assert (await conn.execute(five, {"b": 3})).scalar_one() == 5
        assert (await conn.execute(six, {"b": 3})).scalar_one() == 6
        assert (await conn.execute(five, {"a": 10, "b": 3})).scalar_one() == 13  # a given value wins


async def test_the_result_offers_what_repositories_read(database: PostgresDatabase) -> None:
    rows = text("SELECT n, n * 2 AS twice FROM generate_series(1, :n) n ORDER BY n")
    async with database.transaction() as conn:
        assert [tuple(r) for r in (await conn.execute(rows, {"n": 3})).all()] == [(1, 2), (2, 4), (3, 6)]
        assert (await conn.execute(rows, {"n": 2})).mappings().first()["twice"] == 2  # type: ignore[index]
        assert (await conn.execute(rows, {"n": 0})).first() is None
        assert (await conn.execute(rows, {"n": 0})).scalar() is None
        assert (await conn.execute(rows, {"n": 3})).scalars().all() == [1, 2, 3]
        assert (await conn.execute(rows, {"n": 1})).scalar_one_or_none() == 1
        with pytest.raises(exc.MultipleResultsFound):
            (await conn.execute(rows, {"n": 2})).one()
        with pytest.raises(exc.NoResultFound):
            (await conn.execute(rows, {"n": 0})).scalar_one()
        with pytest.raises(AttributeError):
            _ = (await conn.execute(rows, {"n": 1})).one().no_such_column


async def test_many_values_and_affected_rows(database: PostgresDatabase) -> None:
    async with database.transaction() as conn:
        await conn.execute(text("CREATE TEMP TABLE t (n int)"))
        await conn.execute(text("INSERT INTO t VALUES (:n)"), [{"n": n} for n in range(5)])
        assert await conn.affected(text("DELETE FROM t WHERE n < :n"), {"n": 3}) == 3
        assert await conn.affected(text("UPDATE t SET n = n + 1"), {}) == 2
        assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar_one() == 2


async def test_a_fresh_clause_of_the_same_text_is_compiled_once(database: PostgresDatabase) -> None:
    first, second = text("SELECT CAST(:x AS int)"), text("SELECT CAST(:x AS int)")
    assert driver.compiled(first) is driver.compiled(second)
    typed = text("SELECT :x").bindparams(bindparam("x", type_=JSONB))
    assert driver.compiled(typed) is not driver.compiled(text("SELECT :x"))  # its types are its own


async def test_a_transaction_rolls_back_on_error_and_the_connection_serves_again(database: PostgresDatabase) -> None:
    async with database.transaction() as conn:
        await conn.execute(text("CREATE TABLE kept (n int)"))
    with pytest.raises(InvalidData):
        async with database.transaction() as conn:
            await conn.execute(text("INSERT INTO kept VALUES (1)"))
            await conn.execute(text("SELECT CAST('x' AS int)"))
    async with database.transaction() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM kept"))).scalar_one() == 0


async def test_savepoints_undo_only_their_own_work(database: PostgresDatabase) -> None:
    async with database.transaction() as conn:
        await conn.execute(text("CREATE TEMP TABLE s (n int)"))
        await conn.execute(text("INSERT INTO s VALUES (1)"))
        inner = await conn.savepoint()
        await conn.execute(text("INSERT INTO s VALUES (2)"))
        await conn.rollback_to_savepoint(inner)
        kept = await conn.savepoint()
        await conn.execute(text("INSERT INTO s VALUES (3)"))
        await conn.release_savepoint(kept)
        assert (await conn.execute(text("SELECT array_agg(n ORDER BY n) FROM s"))).scalar_one() == [1, 3]


async def test_a_rollback_on_a_broken_connection_closes_it_instead_of_hiding_the_error(
    database: PostgresDatabase,
) -> None:
    """The server kills the connection mid-transaction: the statement is unavailable (503), the
    rollbacks that follow raise nothing of their own, and the pool serves again."""
    conn = await database.acquire()
    try:
        await conn.begin()
        savepoint = await conn.savepoint()
        with pytest.raises(DatabaseUnavailable):
            await conn.execute(text("SELECT pg_terminate_backend(pg_backend_pid())"))
        await conn.rollback_to_savepoint(savepoint)  # nothing to send it on: no error of its own
        await conn.rollback()
    finally:
        await database.release(conn)
    await database.ping()


async def test_a_connection_released_inside_a_transaction_is_not_given_out_again(
    database: PostgresDatabase,
) -> None:
    """A COMMIT that never ran (cancelled) leaves the transaction open: that connection is closed
    on release, so the next request never inherits its locks or its half-done work."""
    conn = await database.acquire()
    await conn.begin()
    await conn.execute(text("CREATE TEMP TABLE leftover (n int)"))
    pid = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
    await database.release(conn)
    for _ in range(3):
        async with database.transaction() as other:
            assert (await other.execute(text("SELECT pg_backend_pid()"))).scalar_one() != pid


async def test_an_exhausted_pool_waits_then_is_unavailable(pg_url: str) -> None:
    database = PostgresDatabase(pg_url, pool_size=1, max_overflow=0, acquire_timeout_seconds=0.2)
    try:
        async with database.transaction():
            with pytest.raises(DatabaseUnavailable, match="no pooled connection"):
                await database.ping()
        await database.ping()
    finally:
        await database.dispose()


def test_a_database_outlives_the_event_loop_it_was_first_used_in(pg_url: str) -> None:
    """The CLI runs several ``asyncio.run`` in one process: each gets a pool of its own loop."""
    database = PostgresDatabase(pg_url)
    asyncio.run(database.ping())
    asyncio.run(database.ping())

    async def twice() -> None:
        await database.ping()
        await database.dispose()

    asyncio.run(twice())


async def test_a_cancelled_statement_inside_a_savepoint_stays_a_cancellation(database: PostgresDatabase) -> None:
    """Cancelled while its statement runs in a nested block: the cancellation propagates (no
    error of a rollback replaces it), nothing commits, and the pool serves the next request."""
    async with database.transaction() as conn:
        await conn.execute(text("CREATE TABLE touched (n int)"))
    uow = PostgresUnitOfWork(database, TEST_CIPHER)

    async def work() -> None:
        async with uow:
            await uow.session.execute(text("INSERT INTO touched VALUES (1)"))
            async with uow:
                await uow.session.execute(text("SELECT pg_sleep(10)"))
            await uow.commit()

    task = asyncio.create_task(work())
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with database.transaction() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM touched"))).scalar_one() == 0
    await database.ping()


@pytest.mark.parametrize("lose", ["killed", "idle_timeout", "killed_before_commit"])
async def test_a_connection_lost_between_statements_is_unavailable(
    database: PostgresDatabase, pg_url: str, lose: str
) -> None:
    """The server ends a transaction's connection while it waits between two statements (a
    restart, a failover, idle_in_transaction_session_timeout): the next statement, or the
    COMMIT, is unavailable (503, retried), never a defect; and the pool serves again."""
    killer = PostgresDatabase(pg_url, pool_size=1, max_overflow=0)
    uow = PostgresUnitOfWork(database, TEST_CIPHER)
    try:
        with pytest.raises(DatabaseUnavailable):
            async with uow:
                if lose == "idle_timeout":
                    await uow.session.execute(text("SET LOCAL idle_in_transaction_session_timeout = '100ms'"))
                else:
                    pid = (await uow.session.execute(text("SELECT pg_backend_pid()"))).scalar_one()
                    async with killer.connect() as admin:
                        await admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
                await asyncio.sleep(0.5)
                if lose != "killed_before_commit":
                    await uow.session.execute(text("SELECT 1"))
                await uow.commit()
    finally:
        await killer.dispose()
    await database.ping()


async def test_a_commit_after_a_failed_statement_is_refused_not_silently_rolled_back(
    database: PostgresDatabase,
) -> None:
    """PostgreSQL answers COMMIT of a failed transaction with ROLLBACK and no error: a caller
    that went on after a statement failed must not believe its writes were kept."""
    async with database.transaction() as conn:
        await conn.execute(text("CREATE TABLE kept_or_not (n int)"))
    with pytest.raises(DatabaseDefect, match="nothing was written"):
        async with database.transaction() as conn:
            await conn.execute(text("INSERT INTO kept_or_not VALUES (1)"))
            with pytest.raises(InvalidData):
                await conn.execute(text("SELECT CAST(CAST('x' AS text) AS int)"))
    async with database.transaction() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM kept_or_not"))).scalar_one() == 0


async def test_a_disposed_database_hands_out_no_connection_while_it_closes(database: PostgresDatabase) -> None:
    conn = await database.acquire()
    closing = asyncio.create_task(database.dispose())
    await asyncio.sleep(0.05)  # the pool waits for the connection in use
    with pytest.raises(DatabaseUnavailable, match="closing"):
        await database.acquire()
    await database.release(conn)  # to the pool it came from
    await closing
    await database.ping()  # used again: a new pool
