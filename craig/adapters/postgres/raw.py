"""Statements run straight on asyncpg, for the few hot paths where SQLAlchemy's per-execute work
(pool checkout, bind and result processing in Python, greenlet hops) costs more than the query.

The SQL keeps SQLAlchemy's ``:name`` parameters, so fragments are shared with ``text()``
statements; array parameters need explicit casts (``CAST(:ids AS uuid[])``), as asyncpg infers
every parameter's type from the statement. asyncpg prepares each statement once per connection.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg

from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.errors import db_errors
from craig.domain.constants import RAW_CONNECTION_CLOSE_TIMEOUT

_PARAMETER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


class RawStatement:
    def __init__(self, sql: str) -> None:
        self.names: list[str] = []

        def positional(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in self.names:
                self.names.append(name)
            return f"${self.names.index(name) + 1}"

        self.sql = _PARAMETER.sub(positional, sql)

    async def fetch(self, conn: asyncpg.Connection, params: Mapping[str, Any]) -> Sequence[asyncpg.Record]:
        rows: Sequence[asyncpg.Record] = await conn.fetch(self.sql, *(params[name] for name in self.names))
        return rows


class DedicatedConnection:
    """One asyncpg connection owned by one hot loop (like a listener's), used one statement at a
    time, outside any transaction: each statement commits on its own. Made on first use, and
    made again after it breaks (a server restart, a cancelled statement). ``settings`` are
    session settings for it alone."""

    def __init__(self, database: PostgresDatabase, **settings: str) -> None:
        self._database = database
        self._settings = settings
        self._conn: asyncpg.Connection | None = None
        self._lock = asyncio.Lock()

    async def connect(self) -> None:
        """Make the connection now, if there is none (or it broke), rather than on first use."""
        async with self._lock, db_errors():
            await self._ensure()

    async def _ensure(self) -> asyncpg.Connection:
        if self._conn is None or self._conn.is_closed():
            self._conn = await self._database.connect_raw(**self._settings)
        return self._conn

    async def fetch(self, statement: RawStatement, params: Mapping[str, Any]) -> Sequence[asyncpg.Record]:
        async with self._lock, db_errors():
            conn = await self._ensure()
            try:
                return await statement.fetch(conn, params)
            except asyncpg.PostgresError:
                raise  # the statement failed; the connection is fine
            except BaseException:
                self._discard()
                raise

    def _discard(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            conn.terminate()

    async def aclose(self) -> None:
        async with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None and not conn.is_closed():
                try:
                    await asyncio.wait_for(conn.close(), RAW_CONNECTION_CLOSE_TIMEOUT.total_seconds())
                except Exception:
                    conn.terminate()
