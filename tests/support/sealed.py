"""Encrypted-storage helpers: a unit of work with a real field cipher, and the raw stored rows."""

from __future__ import annotations

import base64
import os
from typing import Any

import attrs
from sqlalchemy import text

from craig.adapters.crypto.aesgcm import FieldEncryptor
from craig.adapters.memory.uow import MemoryUnitOfWork
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.ports.cipher import FieldCipher
from craig.ports.unit_of_work import UnitOfWork
from tests.support.backends import Backend


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def encryptor(setting: str | None = None) -> FieldEncryptor:
    return FieldEncryptor.from_setting(setting or new_key())


def uow_with(backend: Backend, cipher: FieldCipher) -> UnitOfWork:
    if backend.memory is not None:
        return MemoryUnitOfWork(backend.memory, cipher=cipher)
    assert backend.postgres is not None
    return PostgresUnitOfWork(backend.postgres, cipher=cipher)


async def raw_rows(backend: Backend, table: str) -> list[dict[str, Any]]:
    """Every row of ``table`` exactly as stored (ciphertext and all)."""
    if backend.memory is not None:
        async with backend.memory.transaction() as tx:
            return [attrs.asdict(row, recurse=False) for row in tx.rows(table)]
    assert backend.postgres is not None
    async with backend.postgres.transaction() as conn:
        return [dict(row) for row in (await conn.execute(text(f"SELECT * FROM {table}"))).mappings()]


async def overwrite(backend: Backend, table: str, key: Any, column: str, value: str) -> None:
    """Write ``value`` into one stored cell behind the repository's back (tampering, legacy data)."""
    if backend.memory is not None:
        async with backend.memory.transaction() as tx:
            row = tx.get(table, key)
            tx.put(table, key, attrs.evolve(row, **{column: value}))
        return
    assert backend.postgres is not None
    async with backend.postgres.transaction() as conn:
        await conn.execute(text(f"UPDATE {table} SET {column} = :value WHERE id = :key"), {"value": value, "key": key})
