"""The transaction an idempotent request runs in.

The idempotency layer opens it (the outermost block of a unit of work) before the handler runs,
binds it here, and commits it with the stored response afterwards. The route's dependencies
hand the same unit of work to the use cases, whose blocks nest inside it. A request without an
``Idempotency-Key`` has none bound, and its use cases get a unit of work of their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from uuid import UUID

import attrs

from craig.ports.unit_of_work import UnitOfWork


@attrs.frozen
class RequestTransaction:
    uow: UnitOfWork
    #: The ``slot_id`` of the idempotency slot the request runs under. It is born with the
    #: slot and kept by every re-claim of it (a retry after a failure or a crash); a slot made
    #: again for the same key after the old one was purged gets a new one. A handler derives
    #: the ids of what it creates from it, so that a retry finds the earlier attempt and a new
    #: request with a recycled key does not.
    slot_id: UUID


_current: ContextVar[RequestTransaction | None] = ContextVar("craig_request_transaction", default=None)


@contextmanager
def bound(transaction: RequestTransaction) -> Iterator[None]:
    """Make ``transaction`` the current request's while the block runs (the handler runs in
    the same task as the idempotency layer, so it sees it)."""
    token = _current.set(transaction)
    try:
        yield
    finally:
        _current.reset(token)


def current() -> RequestTransaction | None:
    return _current.get()
