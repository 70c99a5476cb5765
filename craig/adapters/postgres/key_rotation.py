"""PostgreSQL adapter of the encrypted-column store (``craig keys rotate``)."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.sql.elements import TextClause

from craig.adapters.postgres.database import PostgresDatabase
from craig.ports.key_rotation import EncryptedColumn, EncryptedColumnStore, Rekey, RekeyedBatch

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def _ident(name: str) -> str:
    """Table and column names come from code (``encrypted_columns.py``); still, refuse anything
    that is not a plain identifier rather than splice it into SQL."""
    if not _IDENTIFIER.fullmatch(name):
        raise ValueError(f"not a plain SQL identifier: {name!r}")
    return f'"{name}"'


def _stale(column: EncryptedColumn) -> str:
    col = _ident(column.column)
    if column.binary:  # BYTEA: compare the leading bytes with the prefix's ASCII bytes
        return f"{col} IS NOT NULL AND substr({col}, 1, length(CAST(:prefix AS bytea))) <> CAST(:prefix AS bytea)"
    return f"{col} IS NOT NULL AND NOT starts_with({col}, :prefix)"


def _prefix(column: EncryptedColumn, prefix: str) -> str | bytes:
    return prefix.encode("ascii") if column.binary else prefix


def _select(column: EncryptedColumn, *, after: bool) -> TextClause:
    key, col, table = _ident(column.key), _ident(column.column), _ident(column.table)
    resume = f"AND {key} > :after" if after else ""
    return text(
        f"SELECT {key} AS key, {col} AS value FROM {table} "
        f"WHERE {_stale(column)} {resume} ORDER BY {key} LIMIT :limit FOR UPDATE"
    )


def _update(column: EncryptedColumn) -> TextClause:
    key, col, table = _ident(column.key), _ident(column.column), _ident(column.table)
    return text(f"UPDATE {table} SET {col} = :value WHERE {key} = :key").bindparams(bindparam("key"))


class PostgresEncryptedColumnStore(EncryptedColumnStore):
    def __init__(self, database: PostgresDatabase) -> None:
        self.database = database

    async def count_stale(self, column: EncryptedColumn, current_prefix: str) -> int:
        query = text(f"SELECT count(*) FROM {_ident(column.table)} WHERE {_stale(column)}")
        async with self.database.transaction() as conn:
            return int((await conn.execute(query, {"prefix": _prefix(column, current_prefix)})).scalar_one())

    async def rekey_batch(
        self, column: EncryptedColumn, current_prefix: str, after: Any, limit: int, rekey: Rekey
    ) -> RekeyedBatch:
        params: dict[str, Any] = {"prefix": _prefix(column, current_prefix), "limit": limit}
        if after is not None:
            params["after"] = after
        async with self.database.transaction() as conn:
            rows = (await conn.execute(_select(column, after=after is not None), params)).all()
            updates = []
            for key, value in rows:
                replacement = rekey(key, bytes(value) if column.binary else value)
                if replacement is not None:
                    updates.append({"key": key, "value": replacement.encode("ascii") if column.binary else replacement})
            if updates:
                await conn.execute(_update(column), updates)
        return RekeyedBatch(scanned=len(rows), rewritten=len(updates), last_key=rows[-1][0] if rows else None)
