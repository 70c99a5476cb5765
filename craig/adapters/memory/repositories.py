"""Every memory repository, attached to a unit of work (the one list to extend)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from craig.adapters.memory.idempotency import MemoryIdempotencySlots
from craig.adapters.memory.outbox import MemoryOutboxWriter

if TYPE_CHECKING:
    from craig.adapters.memory.uow import MemoryUnitOfWork


def attach(uow: MemoryUnitOfWork) -> None:
    uow.outbox = MemoryOutboxWriter(uow)
    uow.idempotency = MemoryIdempotencySlots(uow)
