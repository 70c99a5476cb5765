"""Every PostgreSQL repository, attached to a unit of work (the one list to extend)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from craig.adapters.postgres.attachments import PostgresAttachmentRepository
from craig.adapters.postgres.audit import PostgresAuditRepository
from craig.adapters.postgres.cases import PostgresCaseRepository
from craig.adapters.postgres.contacts import PostgresContactRepository
from craig.adapters.postgres.exchange import PostgresPartnerRepository, PostgresTransactionRepository
from craig.adapters.postgres.idempotency import PostgresIdempotencySlots
from craig.adapters.postgres.inbox import PostgresInboxRepository
from craig.adapters.postgres.intake import PostgresReferralRepository
from craig.adapters.postgres.outbox import PostgresOutboxWriter
from craig.adapters.postgres.partner_rate_limit import PostgresPartnerRateLimits
from craig.adapters.postgres.placements import PostgresFosterHomeRepository, PostgresPlacementRepository
from craig.adapters.postgres.rules import PostgresRuleSetRepository
from craig.adapters.postgres.send_jobs import PostgresSendJobRepository

if TYPE_CHECKING:
    from craig.adapters.postgres.uow import PostgresUnitOfWork


def attach(uow: PostgresUnitOfWork) -> None:
    uow.outbox = PostgresOutboxWriter(uow)
    uow.idempotency = PostgresIdempotencySlots(uow)
    uow.inbox = PostgresInboxRepository(uow)
    # cases, contacts, attachments (issue 5)
    uow.cases = PostgresCaseRepository(uow)
    uow.contacts = PostgresContactRepository(uow)
    uow.attachments = PostgresAttachmentRepository(uow)
    # foster homes and placements (issue 6)
    uow.foster_homes = PostgresFosterHomeRepository(uow)
    uow.placements = PostgresPlacementRepository(uow)
    # partner exchange (issue 7)
    uow.partners = PostgresPartnerRepository(uow)
    uow.exchange_transactions = PostgresTransactionRepository(uow)
    uow.send_jobs = PostgresSendJobRepository(uow)
    uow.partner_rate_limits = PostgresPartnerRateLimits(uow)
    # intake referrals and rule sets (issue 8)
    uow.referrals = PostgresReferralRepository(uow)
    uow.rule_sets = PostgresRuleSetRepository(uow)
    uow.audit = PostgresAuditRepository(uow)
