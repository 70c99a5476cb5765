"""Every memory repository, attached to a unit of work (the one list to extend)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from craig.adapters.memory.attachments import MemoryAttachmentRepository
from craig.adapters.memory.audit import MemoryAuditRepository
from craig.adapters.memory.cases import MemoryCaseRepository
from craig.adapters.memory.contacts import MemoryContactRepository
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

if TYPE_CHECKING:
    from craig.adapters.memory.uow import MemoryUnitOfWork


def attach(uow: MemoryUnitOfWork) -> None:
    uow.outbox = MemoryOutboxWriter(uow)
    uow.idempotency = MemoryIdempotencySlots(uow)
    uow.inbox = MemoryInboxRepository(uow)
    # cases, contacts, attachments (issue 5)
    uow.cases = MemoryCaseRepository(uow)
    uow.contacts = MemoryContactRepository(uow)
    uow.attachments = MemoryAttachmentRepository(uow)
    # foster homes and placements (issue 6)
    uow.foster_homes = MemoryFosterHomeRepository(uow)
    uow.placements = MemoryPlacementRepository(uow)
    # partner exchange (issue 7)
    uow.partners = MemoryPartnerRepository(uow)
    uow.exchange_transactions = MemoryTransactionRepository(uow)
    uow.send_jobs = MemorySendJobRepository(uow)
    uow.partner_rate_limits = MemoryPartnerRateLimits(uow)
    # intake referrals and rule sets (issue 8)
    uow.referrals = MemoryReferralRepository(uow)
    uow.rule_sets = MemoryRuleSetRepository(uow)
    uow.audit = MemoryAuditRepository(uow)
