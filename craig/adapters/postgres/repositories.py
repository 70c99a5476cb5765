"""Every PostgreSQL repository, attached to a unit of work (the one list to extend)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from craig.adapters.postgres.cases import PostgresCaseRepository
from craig.adapters.postgres.idempotency import PostgresIdempotencySlots
from craig.adapters.postgres.inbox import PostgresInboxRepository
from craig.adapters.postgres.outbox import PostgresOutboxWriter

if TYPE_CHECKING:
    from craig.adapters.postgres.uow import PostgresUnitOfWork


def attach(uow: PostgresUnitOfWork) -> None:
    uow.outbox = PostgresOutboxWriter(uow)
    uow.idempotency = PostgresIdempotencySlots(uow)
    uow.inbox = PostgresInboxRepository(uow)
    # cases, contacts, attachments (issue 5)
    uow.cases = PostgresCaseRepository(uow)
    # foster homes and placements (issue 6)
    # partner exchange (issue 7)
    # intake referrals and rule sets (issue 8)
