"""The PostgreSQL unit of work: one pooled connection, one transaction, savepoints."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.errors import db_errors
from craig.adapters.transaction import TransactionalUnitOfWork, UnitOfWorkMisuse
from craig.ports.cipher import FieldCipher
from craig.ports.unit_of_work import UnitOfWork


class PostgresUnitOfWork(TransactionalUnitOfWork, UnitOfWork):
    def __init__(self, database: PostgresDatabase, cipher: FieldCipher) -> None:
        super().__init__()
        #: Sensitive columns go through this on every write and read.
        self.cipher = cipher
        self.database = database
        self._conn: AsyncConnection | None = None
        from craig.adapters.postgres.repositories import attach

        attach(self)

    @property
    def connection(self) -> AsyncConnection:
        if self._conn is None:
            raise UnitOfWorkMisuse("postgres repository used outside an `async with uow:` block")
        return self._conn

    async def _begin(self) -> None:
        async with db_errors():
            conn = await self.database.engine.connect()
            try:
                await conn.begin()
            except BaseException:
                await conn.close()
                raise
        self._conn = conn

    async def _finish(self, commit: bool) -> None:
        conn, self._conn = self.connection, None
        try:
            async with db_errors():
                if commit:
                    await conn.commit()
                else:
                    await conn.rollback()
        finally:
            await conn.close()

    async def _commit(self) -> None:
        await self._finish(commit=True)

    async def _rollback(self) -> None:
        await self._finish(commit=False)

    async def _savepoint(self) -> Any:
        async with db_errors():
            return await self.connection.begin_nested()

    async def _release_savepoint(self, savepoint: Any) -> None:
        async with db_errors():
            await savepoint.commit()

    async def _rollback_savepoint(self, savepoint: Any) -> None:
        async with db_errors():
            await savepoint.rollback()
