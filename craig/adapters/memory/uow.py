"""The memory unit of work: the shared state machine over a :class:`MemoryTransaction`.

Each repository is built the first time it is used, on the unit of work's session.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from craig.adapters.memory.attachments import MemoryAttachmentRepository
from craig.adapters.memory.audit import MemoryAuditRepository
from craig.adapters.memory.cases import MemoryCaseRepository
from craig.adapters.memory.contacts import MemoryContactRepository
from craig.adapters.memory.database import MemoryDatabase, MemoryTransaction
from craig.adapters.memory.exchange import (
    MemoryPartnerRateLimits,
    MemoryPartnerRepository,
    MemorySendJobRepository,
    MemoryTransactionRepository,
)
from craig.adapters.memory.idempotency import MemoryIdempotencySlots
from craig.adapters.memory.inbox import MemoryInboxRepository
from craig.adapters.memory.intake import MemoryReferralRepository
from craig.adapters.memory.outbox import MemoryOutboxWriter
from craig.adapters.memory.placements import MemoryFosterHomeRepository, MemoryPlacementRepository
from craig.adapters.memory.rules import MemoryRuleSetRepository
from craig.adapters.memory.session import MemorySession
from craig.adapters.transaction import TransactionalUnitOfWork
from craig.adapters.unrecorded_audit import UnrecordedAuditRepository
from craig.ports.audit import AuditRepository
from craig.ports.cipher import FieldCipher
from craig.ports.unit_of_work import UnitOfWork


class MemoryUnitOfWork(TransactionalUnitOfWork, UnitOfWork):
    def __init__(self, db: MemoryDatabase, cipher: FieldCipher, record_audit: bool = True) -> None:
        super().__init__()
        self.db = db
        self.record_audit = record_audit
        self.session = MemorySession(db, cipher, self.autobegin)

    # --- repositories, built when first used ----------------------------------------------
    @cached_property
    def outbox(self) -> MemoryOutboxWriter:
        return MemoryOutboxWriter(self.session)

    @cached_property
    def inbox(self) -> MemoryInboxRepository:
        return MemoryInboxRepository(self.session)

    @cached_property
    def idempotency(self) -> MemoryIdempotencySlots:
        return MemoryIdempotencySlots(self.session)

    @cached_property
    def cases(self) -> MemoryCaseRepository:
        return MemoryCaseRepository(self.session)

    @cached_property
    def contacts(self) -> MemoryContactRepository:
        return MemoryContactRepository(self.session)

    @cached_property
    def attachments(self) -> MemoryAttachmentRepository:
        return MemoryAttachmentRepository(self.session)

    @cached_property
    def foster_homes(self) -> MemoryFosterHomeRepository:
        return MemoryFosterHomeRepository(self.session)

    @cached_property
    def placements(self) -> MemoryPlacementRepository:
        return MemoryPlacementRepository(self.session)

    @cached_property
    def partners(self) -> MemoryPartnerRepository:
        return MemoryPartnerRepository(self.session)

    @cached_property
    def exchange_transactions(self) -> MemoryTransactionRepository:
        return MemoryTransactionRepository(self.session)

    @cached_property
    def send_jobs(self) -> MemorySendJobRepository:
        return MemorySendJobRepository(self.session)

    @cached_property
    def partner_rate_limits(self) -> MemoryPartnerRateLimits:
        return MemoryPartnerRateLimits(self.session)

    @cached_property
    def referrals(self) -> MemoryReferralRepository:
        return MemoryReferralRepository(self.session)

    @cached_property
    def rule_sets(self) -> MemoryRuleSetRepository:
        return MemoryRuleSetRepository(self.session)

    @cached_property
    def audit(self) -> AuditRepository:
        stored = MemoryAuditRepository(self.session)
        # CRAIG_AUDIT__ENABLED=false (benchmarks and tests only): appends are dropped.
        return stored if self.record_audit else UnrecordedAuditRepository(stored)

    # --- primitives -----------------------------------------------------------------------
    async def _begin(self) -> None:
        tx = MemoryTransaction(self.db)
        await tx.begin()
        self.session.current = tx

    async def _commit(self) -> None:
        tx, self.session.current = self.session.current, None
        if tx is not None:
            tx.commit()

    async def _rollback(self) -> None:
        tx, self.session.current = self.session.current, None
        if tx is not None:
            tx.rollback()

    async def _savepoint(self) -> Any:
        return (await self.session.tx()).mark()

    async def _release_savepoint(self, savepoint: Any) -> None:
        return None

    async def _rollback_savepoint(self, savepoint: Any) -> None:
        (await self.session.tx()).undo_to(savepoint)
