"""An in-memory database with real transactions.

It is serializable by construction: one transaction at a time holds the database lock, and
every write goes through an undo log so a rollback (or a savepoint rollback) restores the
exact previous state. Row locks (``FOR UPDATE``, ``SKIP LOCKED``) are therefore trivially
honoured. It is the database of the ``memory`` profile and of the property tests, and it passes
the same contract suites as PostgreSQL.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Hashable, Iterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import attrs

from craig.adapters.clock import SystemClock
from craig.adapters.transaction import UnitOfWorkMisuse
from craig.adapters.waiters import Waiters
from craig.ports.errors import DatabaseUnavailable, InvalidData

_MISSING: Any = object()


def _refuse_nul(value: Any, depth: int = 0) -> None:
    """PostgreSQL cannot store NUL in text or JSON strings; neither may the memory database, so
    the two adapters answer the same (:class:`InvalidData`) for the same input."""
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidData("text cannot contain the NUL character (0x00)")
    elif depth > 8 or isinstance(value, (bytes, int, float, bool)) or value is None:
        return
    elif isinstance(value, dict):
        for item in value.values():
            _refuse_nul(item, depth + 1)
    elif isinstance(value, (list, tuple, frozenset, set)):
        for item in value:
            _refuse_nul(item, depth + 1)
    elif attrs.has(type(value)):
        for field in attrs.fields(type(value)):
            _refuse_nul(getattr(value, field.name), depth + 1)


class MemoryDatabase:
    """Tables are dicts of primary key -> immutable row; the lock serializes transactions."""

    def __init__(self, clock: Any | None = None) -> None:
        self.clock = clock or SystemClock()
        self._tables: dict[str, dict[Hashable, Any]] = {}
        self._lock = asyncio.Lock()
        self._sequence = 0
        self.notifier = Waiters()
        self.available = True  # tests flip this to simulate an outage
        self._held: dict[str, set[Hashable]] = {}

    def now(self) -> datetime:
        now: datetime = self.clock.now()
        return now

    def next_sequence(self) -> int:
        """A monotonic counter (like a bigserial), for insertion order."""
        self._sequence += 1
        return self._sequence

    def held(self, name: str) -> set[Hashable]:
        """The keys a claimer holds across transactions under ``name`` (the outbox relays'
        batches: the memory counterpart of row and advisory locks held while a batch publishes),
        shared by everything on this database; the claimer adds and removes them."""
        return self._held.setdefault(name, set())

    def raw(self, table: str) -> dict[Hashable, Any]:
        """The live table; only a :class:`MemoryTransaction` may write to it."""
        return self._tables.setdefault(table, {})

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[MemoryTransaction]:
        """A standalone transaction: committed on normal exit, rolled back on error."""
        tx = MemoryTransaction(self)
        await tx.begin()
        try:
            yield tx
        except BaseException:
            tx.rollback()
            raise
        tx.commit()

    async def acquire(self) -> None:
        if not self.available:
            raise DatabaseUnavailable("memory database switched off")
        await self._lock.acquire()

    def release(self) -> None:
        self._lock.release()


class MemoryTransaction:
    """Writes through an undo log; ``mark``/``undo_to`` implement savepoints."""

    def __init__(self, db: MemoryDatabase) -> None:
        self.db = db
        self._undo: list[tuple[str, Hashable, Any]] = []
        self._after_commit: list[Callable[[], None]] = []
        self._active = False

    async def begin(self) -> None:
        await self.db.acquire()
        self._active = True

    def _check(self) -> None:
        if not self._active:
            raise UnitOfWorkMisuse("memory repository used outside a transaction")

    # --- reads ------------------------------------------------------------------------------
    def get(self, table: str, key: Hashable) -> Any:
        """The row, or None (typed Any: a table holds rows of its own type)."""
        self._check()
        return self.db.raw(table).get(key)

    def rows(self, table: str) -> Iterator[Any]:
        self._check()
        return iter(list(self.db.raw(table).values()))

    def select(self, table: str, where: Callable[[Any], bool]) -> list[Any]:
        self._check()
        return [row for row in self.db.raw(table).values() if where(row)]

    # --- writes -----------------------------------------------------------------------------
    def put(self, table: str, key: Hashable, row: Any) -> None:
        self._check()
        _refuse_nul(row)
        data = self.db.raw(table)
        self._undo.append((table, key, data.get(key, _MISSING)))
        data[key] = row

    def insert(self, table: str, key: Hashable, row: Any) -> bool:
        """Insert unless the key exists (``ON CONFLICT DO NOTHING``); True when inserted."""
        if self.get(table, key) is not None:
            return False
        self.put(table, key, row)
        return True

    def delete(self, table: str, key: Hashable) -> bool:
        self._check()
        data = self.db.raw(table)
        if key not in data:
            return False
        self._undo.append((table, key, data.pop(key)))
        return True

    # --- transaction control ----------------------------------------------------------------
    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the transaction commits (like NOTIFY); dropped on rollback."""
        self._after_commit.append(callback)

    def mark(self) -> int:
        return len(self._undo)

    def undo_to(self, mark: int) -> None:
        while len(self._undo) > mark:
            table, key, previous = self._undo.pop()
            data = self.db.raw(table)
            if previous is _MISSING:
                data.pop(key, None)
            else:
                data[key] = previous

    def commit(self) -> None:
        callbacks = list(self._after_commit)
        self._finish()
        for callback in callbacks:
            callback()

    def rollback(self) -> None:
        self.undo_to(0)
        self._finish()

    def _finish(self) -> None:
        if self._active:
            self._active = False
            self._undo.clear()
            self._after_commit.clear()
            self.db.release()
