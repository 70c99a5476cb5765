"""What a PostgreSQL repository works on: the connection of one transaction, and the cipher.

A repository takes this, never the unit of work that owns it, so repositories and the unit of
work do not import each other. The connection is asked for, not held: the unit of work begins
its transaction on the first request (see :mod:`craig.adapters.transaction`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.sql.elements import TextClause

from craig.adapters.postgres.database import DriverConnection
from craig.adapters.postgres.driver import Result
from craig.ports.cipher import FieldCipher


class PostgresSession:
    __slots__ = ("_begin", "cipher", "current")

    def __init__(self, cipher: FieldCipher, begin: Callable[[], Awaitable[None]]) -> None:
        #: Sensitive columns go through this on every write and read.
        self.cipher = cipher
        self._begin = begin
        #: Set by the unit of work while its transaction is open.
        self.current: DriverConnection | None = None

    async def connection(self) -> DriverConnection:
        """The transaction's connection, beginning the transaction if it has not begun."""
        if self.current is None:
            await self._begin()
        assert self.current is not None
        return self.current

    async def execute(self, statement: TextClause, parameters: Any = None) -> Result:
        current = self.current
        if current is None:
            current = await self.connection()
        return await current.execute(statement, parameters)
