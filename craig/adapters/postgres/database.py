"""The PostgreSQL connection pool: asyncpg's, with the statements compiled by SQLAlchemy.

Every transaction of Craig (a unit of work, a store's own transaction, a relay's batch) runs on
a connection of this one pool, through :mod:`craig.adapters.postgres.driver`. The pool is made
on first use, in the event loop that uses it; connections are opened when needed (up to
``pool_size + max_overflow``) and closed after :data:`DATABASE_IDLE_CONNECTION_LIFETIME` unused.
A connection the server closed while it waited in the pool (a restart) is replaced when it is
next taken; one that breaks during a statement answers that statement with
:class:`DatabaseUnavailable` and is never given out again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import structlog
from sqlalchemy import text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.sql.elements import TextClause

from craig.adapters.postgres import driver
from craig.adapters.postgres.driver import Result
from craig.adapters.postgres.errors import TRANSLATED, db_errors, port_error
from craig.adapters.telemetry import child_span_around
from craig.domain.constants import (
    DATABASE_ACQUIRE_TIMEOUT,
    DATABASE_IDLE_CONNECTION_LIFETIME,
    DATABASE_MAX_OVERFLOW_WITHOUT_SETTINGS,
    DATABASE_POOL_CLOSE_TIMEOUT,
    DATABASE_POOL_SIZE_WITHOUT_SETTINGS,
    DATABASE_PREPARED_STATEMENTS_PER_CONNECTION,
    DATABASE_RELEASE_TIMEOUT,
    DATABASE_STATEMENT_TIMEOUT_MS,
)
from craig.ports.errors import DatabaseDefect, DatabaseUnavailable, PortError

log = structlog.get_logger(__name__)
_SELECT_1 = text("SELECT 1")


def async_url(url: str) -> URL:
    """``postgresql://…`` (any driver) as a SQLAlchemy asyncpg URL (what migrations use)."""
    parsed = make_url(url)
    return parsed.set(drivername="postgresql+asyncpg")


def json_value(raw: object) -> Any:
    """JSON(B) as it comes back: decoded by the pool's codecs, or a str from a connection
    without them (a dedicated or listening connection)."""
    return json.loads(raw) if isinstance(raw, str | bytes) else raw


#: Query parameters of a PostgreSQL URL that carry a secret (libpq's names for them).
_SECRET_QUERY = frozenset({"password", "sslpassword"})


def printable_url(url: str) -> str:
    """``url`` for a message or a log line: its password masked, in the user part and in the
    query (``?password=`` is as valid to libpq and asyncpg, and was printed as it was)."""
    parsed = async_url(url)
    query = {key: "masked" if key.lower() in _SECRET_QUERY else value for key, value in parsed.query.items()}
    return parsed.set(query=query).render_as_string(hide_password=True)


def libpq_dsn(url: str) -> str:
    """The same URL as a plain ``postgresql://`` DSN, for asyncpg."""
    return async_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _json_codecs(conn: asyncpg.Connection) -> None:
    """JSON and JSONB as SQLAlchemy's asyncpg dialect sets them up: a parameter is JSON text
    (``bindparam(type_=JSONB)`` serializes it), a value read back is decoded."""
    await conn.set_type_codec("json", encoder=str.encode, decoder=json.loads, schema="pg_catalog", format="binary")
    await conn.set_type_codec(
        "jsonb",
        encoder=lambda value: b"\x01" + value.encode(),  # JSONB's binary format: a version byte
        decoder=lambda data: json.loads(data[1:]),
        schema="pg_catalog",
        format="binary",
    )


async def _as_it_is(_conn: asyncpg.Connection) -> None:
    """Nothing to reset on release: a transaction still open is rolled back by the pool, and
    Craig changes no session state (asyncpg's default reset costs a round trip per release)."""


class DriverConnection:
    """One connection taken from the pool, for one task at a time. ``execute`` takes a
    ``text()`` clause and its values, as SQLAlchemy's ``AsyncConnection.execute`` does, and
    raises port errors (:mod:`craig.adapters.postgres.errors`).

    A connection that answered "unavailable" (the server is shutting down, the session timed
    out, a read-only standby after a failover...) is closed rather than given out again, so the
    pool opens a fresh one, to whichever server now answers."""

    __slots__ = ("_conn", "_pool", "_savepoints", "released")

    def __init__(self, conn: asyncpg.Connection, pool: asyncpg.Pool) -> None:
        self._conn = conn
        self._pool = pool
        self._savepoints = 0
        #: Given back by :meth:`PostgresDatabase.release` (not taken back by the pool on its own).
        self.released = False

    async def execute(self, clause: TextClause, values: Any = None) -> Result:
        """Run ``clause``; a list of values runs it once per item (no rows kept)."""
        try:
            if isinstance(values, list):
                await driver.run_many(self._conn, clause, values)
                return Result([])
            return await driver.run(self._conn, clause, values)
        except TRANSLATED as error:
            raise self._failed(error)  # noqa: B904 -- the cause is set by port_error

    async def affected(self, clause: TextClause, values: Any = None) -> int:
        """Run ``clause`` and return how many rows it inserted, changed or deleted."""
        try:
            return await driver.affected(self._conn, clause, values)
        except TRANSLATED as error:
            raise self._failed(error)  # noqa: B904 -- the cause is set by port_error

    async def _control(self, sql: str) -> str:
        try:
            status: str = await self._conn.execute(sql)
        except TRANSLATED as error:
            raise self._failed(error)  # noqa: B904 -- the cause is set by port_error
        return status

    def _failed(self, error: BaseException) -> PortError:
        """The port error for ``error`` (:func:`port_error`). When asyncpg lost the connection
        between two statements, it gave it back to the pool by itself, and every call on it now
        says so: that is a lost connection (unavailable), unless Craig gave it back itself (a
        defect)."""
        lost = None
        if isinstance(error, asyncpg.InterfaceError) and not self.released and self._lost():
            lost = DatabaseUnavailable(f"the database connection was lost: {error.args[0]}")
        failed = port_error(error, lost)
        if isinstance(failed, DatabaseUnavailable):
            _discard(self._conn)
        return failed

    def _lost(self) -> bool:
        try:
            return bool(self._conn.is_closed())
        except asyncpg.InterfaceError:
            return True  # the pool took it back when it closed

    async def begin(self) -> None:
        await self._control("BEGIN")

    async def commit(self) -> None:
        if await self._control("COMMIT") != "COMMIT":
            # PostgreSQL answers COMMIT in a failed transaction with ROLLBACK, and no error.
            raise DatabaseDefect("COMMIT of a transaction an earlier statement had failed: nothing was written")

    async def rollback(self) -> None:
        await self._undo("ROLLBACK")

    async def savepoint(self) -> str:
        self._savepoints += 1
        name = f"craig_{self._savepoints}"
        await self._control(f"SAVEPOINT {name}")
        return name

    async def release_savepoint(self, name: str) -> None:
        await self._control(f"RELEASE SAVEPOINT {name}")

    async def rollback_to_savepoint(self, name: str) -> None:
        await self._undo(f"ROLLBACK TO SAVEPOINT {name}")

    async def _undo(self, sql: str) -> None:
        """A rollback that cannot be sent (the connection broke, or is still busy with a
        cancelled statement) or that the server refuses closes the connection instead: the
        server then rolls back everything it held, and every later statement on it fails as
        unavailable. So the error being handled is never replaced by the rollback's own."""
        try:
            await self._conn.execute(sql)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, ConnectionError):
            _discard(self._conn)

    @property
    def in_transaction(self) -> bool:
        return bool(self._conn.is_in_transaction())

    @property
    def raw(self) -> asyncpg.Connection:
        """The asyncpg connection itself (tests, and statements that must not be prepared)."""
        return self._conn


class PostgresDatabase:
    """Owns the pool. Transactions come from :class:`PostgresUnitOfWork` and :meth:`transaction`."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = DATABASE_POOL_SIZE_WITHOUT_SETTINGS,
        max_overflow: int = DATABASE_MAX_OVERFLOW_WITHOUT_SETTINGS,
        statement_timeout_ms: int = DATABASE_STATEMENT_TIMEOUT_MS,
        acquire_timeout_seconds: float = DATABASE_ACQUIRE_TIMEOUT.total_seconds(),
    ) -> None:
        self.url = url
        self.statement_timeout_ms = statement_timeout_ms
        self.max_connections = max(1, pool_size + max_overflow)
        self.acquire_timeout = acquire_timeout_seconds
        self._pool: asyncpg.Pool | None = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None
        self._closing = False

    # --- the pool -------------------------------------------------------------------------
    async def _the_pool(self) -> asyncpg.Pool:
        loop = asyncio.get_running_loop()
        if self._pool is not None and self._pool_loop is loop:
            return self._pool
        if self._pool is not None and self._pool_loop is not None and not self._pool_loop.is_closed():
            raise RuntimeError("a PostgresDatabase is used from two running event loops")
        # No lock: with min_size=0 the pool opens no connection to start, so making it never
        # suspends, and no other task can find it half made.
        self._pool = asyncpg.create_pool(
            libpq_dsn(self.url),
            min_size=0,
            max_size=self.max_connections,
            max_inactive_connection_lifetime=DATABASE_IDLE_CONNECTION_LIFETIME.total_seconds(),
            statement_cache_size=DATABASE_PREPARED_STATEMENTS_PER_CONNECTION,
            record_class=driver.Row,
            init=_json_codecs,
            reset=_as_it_is,
            server_settings={"statement_timeout": str(self.statement_timeout_ms)},
        )
        self._pool_loop = loop
        try:
            await self._pool
        except BaseException:
            self._pool = None  # a pool that failed to start is closed: make a new one next time
            raise
        return self._pool

    async def acquire(self) -> DriverConnection:
        """A connection of the pool (give it back with :meth:`release`)."""
        if self._closing:
            raise DatabaseUnavailable("the database pool is closing (the process is stopping)")
        try:
            pool = await self._the_pool()
            # asyncio.timeout, not acquire(timeout=): that one runs the wait in a task of its own.
            async with asyncio.timeout(self.acquire_timeout):
                conn = await pool.acquire()
        except TimeoutError as error:
            if pool.get_size() >= self.max_connections:
                raise DatabaseUnavailable(
                    f"no pooled connection became free within {self.acquire_timeout:g} s "
                    f"(all {self.max_connections} of this process's connections stayed busy)"
                ) from error
            # The pool had room: opening a connection (or its first answer) took that long.
            raise DatabaseUnavailable(
                f"the database did not answer within {self.acquire_timeout:g} s (no connection could be opened)"
            ) from error
        except TRANSLATED as error:
            raise port_error(error)  # noqa: B904 -- port_error sets the cause
        return DriverConnection(conn, pool)

    async def release(self, conn: DriverConnection) -> None:
        """Give ``conn`` back to the pool it came from. One still inside a transaction (its
        COMMIT or ROLLBACK failed or was cancelled) is closed instead: its state is unknown.
        One whose cancelled statement the server does not acknowledge within
        ``DATABASE_RELEASE_TIMEOUT`` is closed too (asyncpg does it), so giving a connection
        back never waits longer than that on a server that stopped answering."""
        if conn.released:
            return
        conn.released = True
        raw = conn.raw
        try:
            if raw.is_in_transaction():
                raw.terminate()
        except asyncpg.InterfaceError:
            return  # the server closed it, and the pool took it back already
        try:
            await conn._pool.release(raw, timeout=DATABASE_RELEASE_TIMEOUT.total_seconds())
        except TimeoutError:
            log.warning(
                "database connection closed: the server did not acknowledge a cancelled statement",
                within_seconds=DATABASE_RELEASE_TIMEOUT.total_seconds(),
            )
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as error:
            # asyncpg closed the connection when it could not make it ready for the next user.
            log.warning("database connection closed on release", error=f"{type(error).__name__}: {error}")

    # --- transactions ---------------------------------------------------------------------
    @asynccontextmanager
    async def connect(self) -> AsyncIterator[DriverConnection]:
        """A pooled connection outside any transaction: each statement commits on its own."""
        conn = await self.acquire()
        try:
            yield conn
        finally:
            await self.release(conn)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[DriverConnection]:
        """A standalone transaction: COMMIT on normal exit, ROLLBACK on error."""
        with child_span_around("db transaction", attributes={"db.system.name": "postgresql"}):
            conn = await self.acquire()
            try:
                await conn.begin()
                try:
                    yield conn
                except BaseException:
                    await conn.rollback()  # never raises: one that cannot be done closes the connection
                    raise
                await conn.commit()
            finally:
                await self.release(conn)

    async def connect_raw(self, **settings: str) -> asyncpg.Connection:
        """A new asyncpg connection outside the pool, with the pool's settings plus ``settings``
        (the caller closes it): for a hot loop that keeps one, see ``raw.DedicatedConnection``."""
        async with db_errors():
            return await asyncpg.connect(
                libpq_dsn(self.url),
                server_settings={"statement_timeout": str(self.statement_timeout_ms), **settings},
            )

    async def ping(self) -> None:
        async with self.connect() as conn:
            await conn.execute(_SELECT_1)

    async def dispose(self) -> None:
        """Close the pool: connections in use are closed when given back, and no new one is
        handed out meanwhile. Used again afterwards, the database makes a new pool."""
        pool = self._pool
        if pool is None or self._pool_loop is not asyncio.get_running_loop():
            self._pool = None
            return
        self._closing = True
        try:
            await asyncio.wait_for(pool.close(), DATABASE_POOL_CLOSE_TIMEOUT.total_seconds())
        except (TimeoutError, OSError, asyncpg.InterfaceError):
            pool.terminate()
        finally:
            self._pool = None
            self._closing = False

    def __repr__(self) -> str:
        return f"PostgresDatabase({printable_url(self.url)})"


def _discard(raw: asyncpg.Connection) -> None:
    """Close a connection at once (a closed one the pool took back already is left alone)."""
    with contextlib.suppress(asyncpg.InterfaceError):
        raw.terminate()
