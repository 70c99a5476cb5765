"""The unit-of-work state machine shared by every database adapter.

Blocks, savepoints, held commits and release are the same logic whether the transaction is
a PostgreSQL one or the memory database's; subclasses supply only the primitive operations.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

from craig.ports.errors import PortError


class UnitOfWorkMisuse(PortError):
    """A programming error: a repository used outside a block, a commit with no block..."""


class TransactionalUnitOfWork(abc.ABC):
    """Implements the block/savepoint/hold contract of :class:`craig.ports.unit_of_work.UnitOfWork`."""

    def __init__(self) -> None:
        self._open = False  # a real transaction is open
        self._hold = False  # the request owner holds commits
        self._held = False  # a held commit is waiting for release()
        # One entry per open block: [savepoint handle or None, committed?, callbacks mark]
        self._blocks: list[list[Any]] = []
        self._after_commit: list[Callable[[], object]] = []

    # --- primitives ---------------------------------------------------------------------
    @abc.abstractmethod
    async def _begin(self) -> None: ...

    @abc.abstractmethod
    async def _commit(self) -> None: ...

    @abc.abstractmethod
    async def _rollback(self) -> None: ...

    @abc.abstractmethod
    async def _savepoint(self) -> Any: ...

    @abc.abstractmethod
    async def _release_savepoint(self, savepoint: Any) -> None: ...

    @abc.abstractmethod
    async def _rollback_savepoint(self, savepoint: Any) -> None: ...

    # --- contract -------------------------------------------------------------------------
    @property
    def has_pending_commit(self) -> bool:
        return self._held

    def hold_commits(self) -> None:
        self._hold = True

    async def __aenter__(self) -> Self:
        if self._open:
            self._blocks.append([await self._savepoint(), False, len(self._after_commit)])
        else:
            await self._begin()
            self._open = True
            self._blocks.append([None, False, len(self._after_commit)])
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        savepoint, committed, mark = self._blocks.pop()
        if committed:
            return
        del self._after_commit[mark:]  # what this block promised is void
        if savepoint is not None:
            await self._rollback_savepoint(savepoint)
        elif self._open:
            self._open = False
            self._held = False
            await self._rollback()

    async def commit(self, *, immediately: bool = False) -> None:
        if not self._blocks:
            raise UnitOfWorkMisuse("commit() outside an `async with uow:` block")
        block = self._blocks[-1]
        if block[1]:
            raise UnitOfWorkMisuse("commit() called twice in one block")
        outermost = len(self._blocks) == 1
        if immediately and not outermost:
            raise UnitOfWorkMisuse("commit(immediately=True) inside a nested block")
        if block[0] is not None:
            await self._release_savepoint(block[0])
        block[1] = True
        if immediately or (outermost and block[0] is None and not self._hold):
            await self._end(commit=True)
        elif outermost:
            self._held = True

    def after_commit(self, callback: Callable[[], object]) -> None:
        if not self._blocks:
            raise UnitOfWorkMisuse("after_commit() outside an `async with uow:` block")
        self._after_commit.append(callback)

    async def release(self, *, commit: bool) -> None:
        if self._blocks:
            raise UnitOfWorkMisuse("release() while a block is still open")
        if self._open:
            await self._end(commit=commit)

    async def _end(self, *, commit: bool) -> None:
        self._open = False
        self._held = False
        callbacks, self._after_commit = self._after_commit, []
        if commit:
            await self._commit()
            for callback in callbacks:
                callback()
        else:
            await self._rollback()
