"""The PostgreSQL connection pool (SQLAlchemy async engine over asyncpg)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from sqlalchemy import text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from craig.adapters.postgres.errors import db_errors
from craig.adapters.telemetry import child_span_around
from craig.domain.constants import (
    DATABASE_MAX_OVERFLOW_WITHOUT_SETTINGS,
    DATABASE_POOL_RECYCLE,
    DATABASE_POOL_SIZE_WITHOUT_SETTINGS,
    DATABASE_STATEMENT_TIMEOUT_MS,
)


def async_url(url: str) -> URL:
    """``postgresql://…`` (any driver) as a SQLAlchemy asyncpg URL."""
    parsed = make_url(url)
    return parsed.set(drivername="postgresql+asyncpg")


def json_value(raw: object) -> Any:
    """JSONB as asyncpg hands it over: a str (through ``text()`` or a raw connection), or already
    decoded."""
    return json.loads(raw) if isinstance(raw, str | bytes) else raw


def libpq_dsn(url: str) -> str:
    """The same URL as a plain ``postgresql://`` DSN, for raw asyncpg connections."""
    return async_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class PostgresDatabase:
    """Owns the engine. Transactions come from :class:`PostgresUnitOfWork`."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = DATABASE_POOL_SIZE_WITHOUT_SETTINGS,
        max_overflow: int = DATABASE_MAX_OVERFLOW_WITHOUT_SETTINGS,
        statement_timeout_ms: int = DATABASE_STATEMENT_TIMEOUT_MS,
    ) -> None:
        self.url = url
        self.statement_timeout_ms = statement_timeout_ms
        self.engine: AsyncEngine = create_async_engine(
            async_url(url),
            pool_size=pool_size,
            max_overflow=max_overflow,
            # No ping per checkout: it costs a round trip on every transaction (a quarter of the
            # send-job worker's throughput, measured). After a server restart the first statement
            # on a dead connection fails (503, retried by the client with its Idempotency-Key)
            # and SQLAlchemy invalidates the whole pool at once.
            pool_pre_ping=False,
            pool_recycle=int(DATABASE_POOL_RECYCLE.total_seconds()),
            # An error's text never carries the statement's parameters (personal data) into a log.
            hide_parameters=True,
            connect_args={"server_settings": {"statement_timeout": str(statement_timeout_ms)}},
        )

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncConnection]:
        """A pooled connection in autocommit-per-block style (caller begins/commits)."""
        async with db_errors():
            conn = await self.engine.connect()
        try:
            yield conn
        finally:
            await conn.close()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        """A standalone transaction: COMMIT on normal exit, ROLLBACK on error."""
        with child_span_around("db transaction", attributes={"db.system.name": "postgresql"}):
            async with db_errors(), self.engine.begin() as conn:
                yield conn

    async def connect_raw(self, **settings: str) -> asyncpg.Connection:
        """A new asyncpg connection outside the pool, with the pool's settings plus ``settings``
        (the caller closes it): for a hot loop that keeps one, see ``raw.DedicatedConnection``."""
        async with db_errors():
            return await asyncpg.connect(
                libpq_dsn(self.url),
                server_settings={"statement_timeout": str(self.statement_timeout_ms), **settings},
            )

    async def ping(self) -> None:
        async with db_errors(), self.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    async def dispose(self) -> None:
        await self.engine.dispose()

    def __repr__(self) -> str:
        return f"PostgresDatabase({async_url(self.url).render_as_string(hide_password=True)})"
