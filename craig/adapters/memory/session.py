"""What a memory repository works on: the transaction, its database and the cipher.

A repository takes this, never the unit of work that owns it. The transaction is asked for, not
held: the unit of work begins it on the first request (see :mod:`craig.adapters.transaction`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from craig.adapters.memory.database import MemoryDatabase, MemoryTransaction
from craig.ports.cipher import FieldCipher


class MemorySession:
    def __init__(self, db: MemoryDatabase, cipher: FieldCipher, begin: Callable[[], Awaitable[None]]) -> None:
        self.db = db
        #: Sensitive columns go through this on every write and read.
        self.cipher = cipher
        self._begin = begin
        #: Set by the unit of work while its transaction is open.
        self.current: MemoryTransaction | None = None

    async def tx(self) -> MemoryTransaction:
        """The open transaction, beginning it if it has not begun."""
        if self.current is None:
            await self._begin()
        assert self.current is not None
        return self.current
