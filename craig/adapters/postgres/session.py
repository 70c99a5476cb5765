"""What a PostgreSQL repository works on: the connection of one transaction, and the cipher.

A repository takes this, never the unit of work that owns it, so repositories and the unit of
work do not import each other. The connection is asked for, not held: the unit of work begins
its transaction on the first request (see :mod:`craig.adapters.transaction`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import CursorResult
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import Executable

from craig.ports.cipher import FieldCipher


class PostgresSession:
    def __init__(self, cipher: FieldCipher, begin: Callable[[], Awaitable[None]]) -> None:
        #: Sensitive columns go through this on every write and read.
        self.cipher = cipher
        self._begin = begin
        #: Set by the unit of work while its transaction is open.
        self.current: AsyncConnection | None = None

    async def connection(self) -> AsyncConnection:
        """The transaction's connection, beginning the transaction if it has not begun."""
        if self.current is None:
            await self._begin()
        assert self.current is not None
        return self.current

    async def execute(self, statement: Executable, parameters: Any = None) -> CursorResult[Any]:
        return await (await self.connection()).execute(statement, parameters)
