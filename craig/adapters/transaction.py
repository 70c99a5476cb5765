"""The unit-of-work state machine shared by every database adapter.

Blocks, savepoints and the lazy start of the transaction are the same logic whether the
transaction is a PostgreSQL one or the memory database's; subclasses supply only the primitive
operations.

The transaction begins when it is first needed (SQLAlchemy calls this *autobegin*): when a
repository is first used, or when a nested block is entered. So a block opened around other
work (the HTTP layer opens a request's transaction before the handler runs) costs no
connection until something in it touches the database, and a unit of work of its own that the
handler opens meanwhile (the first phase of an upload) never waits behind it.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

import attrs

from craig.ports.errors import PortError


class UnitOfWorkMisuse(PortError):
    """A programming error: a repository used outside a block, a commit with no block..."""


@attrs.define
class _Block:
    #: The savepoint of a nested block; None for the outermost one (the transaction itself).
    savepoint: Any
    #: How many after-commit callbacks were registered before this block opened.
    mark: int
    committed: bool = False


class TransactionalUnitOfWork(abc.ABC):
    """Implements :class:`craig.ports.unit_of_work.UnitOfWork` over the primitives below."""

    def __init__(self) -> None:
        self._blocks: list[_Block] = []
        self._begun = False  # the real transaction has started
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
    async def autobegin(self) -> None:
        """Begin the transaction if it has not begun; the repositories' sessions call this."""
        if not self._blocks:
            raise UnitOfWorkMisuse("repository used outside an `async with uow:` block")
        if not self._begun:
            await self._begin()
            self._begun = True

    async def __aenter__(self) -> Self:
        if self._blocks:
            await self.autobegin()
            self._blocks.append(_Block(await self._savepoint(), len(self._after_commit)))
        else:
            self._blocks.append(_Block(None, len(self._after_commit)))
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        block = self._blocks.pop()
        if block.committed:
            return
        del self._after_commit[block.mark :]  # what this block promised is void
        if block.savepoint is not None:
            await self._rollback_savepoint(block.savepoint)
        elif self._begun:
            self._begun = False
            await self._rollback()

    async def commit(self) -> None:
        if not self._blocks:
            raise UnitOfWorkMisuse("commit() outside an `async with uow:` block")
        block = self._blocks[-1]
        if block.committed:
            raise UnitOfWorkMisuse("commit() called twice in one block")
        if block.savepoint is not None:
            await self._release_savepoint(block.savepoint)
            block.committed = True
            return
        block.committed = True
        callbacks, self._after_commit = self._after_commit, []
        if self._begun:
            self._begun = False
            await self._commit()
        for callback in callbacks:
            callback()

    def after_commit(self, callback: Callable[[], object]) -> None:
        if not self._blocks:
            raise UnitOfWorkMisuse("after_commit() outside an `async with uow:` block")
        self._after_commit.append(callback)
