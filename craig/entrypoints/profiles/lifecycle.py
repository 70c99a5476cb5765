"""Starting and stopping what a profile needs: the initializers of its adapter set's resources.

Each function here is given to a ``providers.Resource`` of an adapter set
(:mod:`craig.entrypoints.profiles`): it starts one dependency, yields while it runs, and stops
it on the way out, also when starting it failed halfway. A dependency that cannot be started is
a :class:`StartupError`: one line for the operator that names it and says how to fix it.
:func:`craig.entrypoints.runtime.running` starts them in order and stops them in reverse.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Literal, Protocol

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.postgres import migrations
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.embedded import EmbeddedPostgres
from craig.adapters.postgres.notify import PostgresListener
from craig.ports.errors import ObjectStoreUnavailable, PortError
from craig.ports.messaging import EventBus
from craig.ports.object_store import ObjectStore


class StartupError(Exception):
    """One line for the operator: what is wrong and how to fix it.

    ``transient`` says the dependency could not be reached (nothing listens, a timeout, a 5xx):
    it may come back by itself, so a process that can do without it for a while (``craig
    serve`` without RabbitMQ or the object store) starts degraded and keeps trying. Anything
    else (wrong credentials, a missing virtual host) is a misconfiguration, refused at once."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


#: Socket errors that say nothing answered (rather than that something answered "no").
_UNREACHABLE_ERRNOS = frozenset(
    {
        errno.ECONNREFUSED,
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.ETIMEDOUT,
        errno.EPIPE,
    }
)


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the dependency could not be reached (rather than that it refused):
    an object store that is unavailable (no connection, a timeout, a 5xx), or a connection
    refused, reset or timed out, or a name that does not resolve, anywhere in the chain of
    causes. A broker that refused the login answers, so it is not unreachable."""
    if isinstance(error, ObjectStoreUnavailable):
        return True
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (TimeoutError, socket.gaierror)):
            return True
        if isinstance(current, OSError) and current.errno in _UNREACHABLE_ERRNOS:
            return True
        current = current.__cause__ or current.__context__
    return False


#: What starting the database does to its schema: migrate it to head, check that it is at head
#: (refuse otherwise), or leave it alone (``craig db`` migrates it itself).
Schema = Literal["migrate", "check", "ignore"]

#: A dependency's readiness check: raises when the dependency is down.
HealthCheck = Callable[[], Awaitable[None]]


async def nothing_to_start(**_options: object) -> AsyncIterator[None]:
    """A dependency the profile keeps in process: nothing to start or stop (whatever the
    options, such as the schema policy of a database that has no schema)."""
    yield


# --- PostgreSQL -------------------------------------------------------------------------------
class PostgresServer(Protocol):
    """What runs PostgreSQL: started before the pool is used, stopped after it is closed."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class ExternalPostgres(PostgresServer):
    """A server someone else runs (production, and the tests' server): nothing to do."""

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


class EmbeddedServer(PostgresServer):
    """The PostgreSQL Craig runs itself (embedded profile), with the database Craig uses."""

    def __init__(self, server: EmbeddedPostgres, database: str, shown_as: Path) -> None:
        self.server = server
        self.database = database
        self.shown_as = shown_as

    async def start(self) -> None:
        """Start the server and make its database. A start that fails or is cancelled (a
        worker told to stop while it starts) stops the server it started: the thread starting
        it cannot be interrupted, so a cancelled start waits for it and then stops the server,
        which would otherwise outlive the process, and be reused and never stopped by the next."""
        starting = asyncio.ensure_future(asyncio.to_thread(self._start))
        try:
            await asyncio.shield(starting)
        except BaseException as error:
            with contextlib.suppress(Exception):
                await starting  # the thread runs on: let it finish, then undo it
            await asyncio.to_thread(self.server.stop_if_started_here)
            if isinstance(error, Exception):
                raise StartupError(f"embedded PostgreSQL under {self.shown_as} did not start: {error}") from error
            raise

    def _start(self) -> None:
        self.server.start()
        self.server.ensure_database(self.database)

    async def stop(self) -> None:
        await asyncio.to_thread(self.server.stop_if_started_here)


async def postgres_running(
    server: PostgresServer, database: PostgresDatabase, url: str, schema: Schema
) -> AsyncIterator[None]:
    """Start the server (if Craig runs it), reach the database, then migrate or check its schema
    as ``schema`` says; on the way out close the pool, then stop the server."""
    await server.start()
    try:
        try:
            await database.ping()
        except PortError as error:
            raise StartupError(
                f"cannot reach PostgreSQL ({database!r}): {error}; check CRAIG_DATABASE__URL and that the server runs"
            ) from error
        if schema == "migrate":
            try:
                await asyncio.to_thread(migrations.upgrade_to_head, url)
            except DBAPIError as error:  # e.g. a revision's table lock not granted in time
                cause = error.orig if error.orig is not None else error
                raise StartupError(
                    f"migrating the embedded database failed: {type(cause).__name__}: "
                    f"{str(cause).splitlines()[0] if str(cause) else ''}; nothing of that revision was "
                    "applied, start again"
                ) from error
        elif schema == "check":
            await check_schema(database)
        yield
    finally:
        try:
            await database.dispose()
        finally:
            await server.stop()


async def check_schema(database: PostgresDatabase) -> None:
    """Refuse a database whose schema is not at this Craig's head revision."""
    head = migrations.head_revision()
    async with database.connect() as conn:
        # An unmigrated database has no alembic_version; any other error must not pass for that.
        current = None
        if (await conn.execute(text("SELECT to_regclass('alembic_version')"))).scalar() is not None:
            current = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
    if current != head:
        raise StartupError(
            f"database schema is at revision {current or 'none'} but this Craig needs {head}; run `craig db upgrade`"
        )


async def listening(listener: PostgresListener) -> AsyncIterator[None]:
    """The LISTEN connection that wakes the relay, idempotency waiters and send-job workers."""
    await listener.start()
    try:
        yield
    finally:
        await listener.stop()


def memory_ping(database: Callable[[], MemoryDatabase]) -> HealthCheck:
    async def ping() -> None:
        async with database().transaction():
            pass

    return ping


def postgres_ping(database: Callable[[], PostgresDatabase]) -> HealthCheck:
    """Reachable and migrated: the schema at this Craig's head revision."""

    async def ping() -> None:
        await database().ping()
        await check_schema(database())

    return ping


# --- object store -----------------------------------------------------------------------------
def unusable_store(store: ObjectStore, error: PortError) -> str:
    return f"the object store {store!r} is unusable: {error}"


async def object_store_prepared(
    store: ObjectStore, explain: Callable[[ObjectStore, PortError], str] = unusable_store
) -> AsyncIterator[None]:
    """Reach the object store and create its bucket (or directory) when missing; ``explain``
    words the failure for the operator."""
    try:
        await store.prepare()
    except PortError as error:
        raise StartupError(explain(store, error), transient=unreachable(error)) from error
    yield


def object_store_ping(store: Callable[[], ObjectStore]) -> HealthCheck:
    """Resolved on every check, so a store swapped after startup is the one checked."""

    async def ping() -> None:
        await store().ping()

    return ping


# --- broker -----------------------------------------------------------------------------------
async def broker_reached(bus: EventBus) -> AsyncIterator[None]:
    """Connect to the broker (declaring its exchanges); close the connection on the way out."""
    try:
        await bus.connect([])
    except PortError as error:
        raise StartupError(
            f"{error}; check CRAIG_BROKER__URL and that RabbitMQ runs", transient=unreachable(error)
        ) from error
    try:
        yield
    finally:
        await bus.close()


async def in_the_database(database: object) -> AsyncIterator[None]:
    """The in-process bus keeps its queues in the database: reaching it is reaching that (the
    resource is given the database's, which starts first)."""
    yield


def broker_ping(bus: Callable[[], EventBus]) -> HealthCheck:
    async def ping() -> None:
        await bus().ping()

    return ping
