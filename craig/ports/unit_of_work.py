"""The unit of work: one database transaction.

This port is only the transaction. The repositories a unit of work offers on it are named by
the ``Has...`` protocols beside each repository port (:class:`craig.ports.cases.HasCases`,
:class:`craig.ports.outbox.HasOutbox`, ...); a use case's constructor names exactly the ones it
uses, as a protocol that combines them with this one.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Protocol, Self


class UnitOfWork(Protocol):
    """An async context manager around one transaction.

    Contract:

    * ``async with uow:`` opens a block. The outermost block is the transaction; a nested block
      is a savepoint inside it. The transaction begins when it is first needed (a repository's
      first use, or a nested block), so opening a block costs nothing until then.
    * ``await uow.commit()`` makes the block's writes part of the transaction's result; for the
      outermost block that is the COMMIT. Leaving a block without ``commit()`` rolls that block
      back, exception or not.
    * Whoever must hold a transaction open around a use case (the HTTP idempotency layer, which
      stores the response in the same transaction) opens the outermost block itself; the use
      case's block nests inside it and never learns of it.
    * ``after_commit(callback)`` runs ``callback`` once the transaction has really committed; it
      is dropped when the block that registered it rolls back. For in-process effects that must
      not outlive a rollback (a cache entry).
    * Repositories may only be used inside a block. Errors are :mod:`craig.ports.errors`.
    """

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    async def commit(self) -> None: ...

    def after_commit(self, callback: Callable[[], object]) -> None: ...


UnitOfWorkFactory = Callable[[], UnitOfWork]
