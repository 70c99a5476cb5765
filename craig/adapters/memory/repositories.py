"""Every memory repository, attached to a unit of work (the one list to extend)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from craig.adapters.memory.cases import MemoryCaseRepository
from craig.adapters.memory.idempotency import MemoryIdempotencySlots
from craig.adapters.memory.inbox import MemoryInboxRepository
from craig.adapters.memory.outbox import MemoryOutboxWriter

if TYPE_CHECKING:
    from craig.adapters.memory.uow import MemoryUnitOfWork


def attach(uow: MemoryUnitOfWork) -> None:
    uow.outbox = MemoryOutboxWriter(uow)
    uow.idempotency = MemoryIdempotencySlots(uow)
    uow.inbox = MemoryInboxRepository(uow)
    # cases, contacts, attachments (issue 5)
    uow.cases = MemoryCaseRepository(uow)
    # foster homes and placements (issue 6)
    # partner exchange (issue 7)
    # intake referrals and rule sets (issue 8)
