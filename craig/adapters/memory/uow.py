"""The memory unit of work: the shared state machine over a :class:`MemoryTransaction`."""

from __future__ import annotations

from typing import Any

from craig.adapters.memory.database import MemoryDatabase, MemoryTransaction
from craig.adapters.transaction import TransactionalUnitOfWork, UnitOfWorkMisuse
from craig.ports.cipher import FieldCipher
from craig.ports.unit_of_work import UnitOfWork


class MemoryUnitOfWork(TransactionalUnitOfWork, UnitOfWork):
    def __init__(self, db: MemoryDatabase, cipher: FieldCipher) -> None:
        super().__init__()
        #: Sensitive columns go through this on every write and read.
        self.cipher = cipher
        self.db = db
        self._tx: MemoryTransaction | None = None
        from craig.adapters.memory.repositories import attach

        attach(self)

    @property
    def tx(self) -> MemoryTransaction:
        if self._tx is None:
            raise UnitOfWorkMisuse("memory repository used outside an `async with uow:` block")
        return self._tx

    async def _begin(self) -> None:
        tx = MemoryTransaction(self.db)
        await tx.begin()
        self._tx = tx

    async def _commit(self) -> None:
        tx, self._tx = self.tx, None
        tx.commit()

    async def _rollback(self) -> None:
        tx, self._tx = self.tx, None
        tx.rollback()

    async def _savepoint(self) -> Any:
        return self.tx.mark()

    async def _release_savepoint(self, savepoint: Any) -> None:
        return None

    async def _rollback_savepoint(self, savepoint: Any) -> None:
        self.tx.undo_to(savepoint)
