"""The PostgreSQL unit of work: one pooled connection, one transaction, savepoints.

Each repository is built the first time it is used, on the unit of work's session.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from craig.adapters.postgres.attachments import PostgresAttachmentRepository
from craig.adapters.postgres.audit import PostgresAuditRepository
from craig.adapters.postgres.cases import PostgresCaseRepository
from craig.adapters.postgres.contacts import PostgresContactRepository
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.exchange import PostgresPartnerRepository, PostgresTransactionRepository
from craig.adapters.postgres.idempotency import PostgresIdempotencySlots
from craig.adapters.postgres.inbox import PostgresInboxRepository
from craig.adapters.postgres.intake import PostgresReferralRepository
from craig.adapters.postgres.outbox import PostgresOutboxWriter
from craig.adapters.postgres.partner_rate_limit import PostgresPartnerRateLimits
from craig.adapters.postgres.placements import PostgresFosterHomeRepository, PostgresPlacementRepository
from craig.adapters.postgres.rules import PostgresRuleSetRepository
from craig.adapters.postgres.send_jobs import PostgresSendJobRepository
from craig.adapters.postgres.session import PostgresSession
from craig.adapters.telemetry import Span, child_span
from craig.adapters.transaction import TransactionalUnitOfWork
from craig.adapters.unrecorded_audit import UnrecordedAuditRepository
from craig.ports.audit import AuditRepository
from craig.ports.cipher import FieldCipher
from craig.ports.unit_of_work import UnitOfWork

_DB = {"db.system.name": "postgresql"}


class PostgresUnitOfWork(TransactionalUnitOfWork, UnitOfWork):
    def __init__(self, database: PostgresDatabase, cipher: FieldCipher, record_audit: bool = True) -> None:
        super().__init__()
        self.database = database
        self.record_audit = record_audit
        self.session = PostgresSession(cipher, self.autobegin)
        #: The open transaction's span (tracing on, within a trace): from BEGIN to COMMIT/ROLLBACK.
        self._transaction_span = Span()

    # --- repositories, built when first used ----------------------------------------------
    @cached_property
    def outbox(self) -> PostgresOutboxWriter:
        return PostgresOutboxWriter(self.session)

    @cached_property
    def inbox(self) -> PostgresInboxRepository:
        return PostgresInboxRepository(self.session)

    @cached_property
    def idempotency(self) -> PostgresIdempotencySlots:
        return PostgresIdempotencySlots(self.session)

    @cached_property
    def cases(self) -> PostgresCaseRepository:
        return PostgresCaseRepository(self.session)

    @cached_property
    def contacts(self) -> PostgresContactRepository:
        return PostgresContactRepository(self.session)

    @cached_property
    def attachments(self) -> PostgresAttachmentRepository:
        return PostgresAttachmentRepository(self.session)

    @cached_property
    def foster_homes(self) -> PostgresFosterHomeRepository:
        return PostgresFosterHomeRepository(self.session)

    @cached_property
    def placements(self) -> PostgresPlacementRepository:
        return PostgresPlacementRepository(self.session)

    @cached_property
    def partners(self) -> PostgresPartnerRepository:
        return PostgresPartnerRepository(self.session)

    @cached_property
    def exchange_transactions(self) -> PostgresTransactionRepository:
        return PostgresTransactionRepository(self.session)

    @cached_property
    def send_jobs(self) -> PostgresSendJobRepository:
        return PostgresSendJobRepository(self.session)

    @cached_property
    def partner_rate_limits(self) -> PostgresPartnerRateLimits:
        return PostgresPartnerRateLimits(self.session)

    @cached_property
    def referrals(self) -> PostgresReferralRepository:
        return PostgresReferralRepository(self.session)

    @cached_property
    def rule_sets(self) -> PostgresRuleSetRepository:
        return PostgresRuleSetRepository(self.session)

    @cached_property
    def audit(self) -> AuditRepository:
        stored = PostgresAuditRepository(self.session)
        # CRAIG_AUDIT__ENABLED=false (benchmarks and tests only): appends are dropped.
        return stored if self.record_audit else UnrecordedAuditRepository(stored)

    # --- primitives -----------------------------------------------------------------------
    async def _begin(self) -> None:
        conn = await self.database.acquire()
        try:
            await conn.begin()
        except BaseException:
            await self.database.release(conn)
            raise
        self.session.current = conn
        self._transaction_span = child_span("db transaction", attributes=_DB)

    async def _finish(self, commit: bool) -> None:
        conn = self.session.current
        self.session.current = None
        if conn is None:
            return
        traced, self._transaction_span = self._transaction_span, Span()
        traced.set("craig.db.outcome", "commit" if commit else "rollback")
        try:
            if commit:
                await conn.commit()
            else:
                await conn.rollback()
        except BaseException as error:
            traced.failed(error)
            raise
        finally:
            traced.end()
            await self.database.release(conn)

    async def _commit(self) -> None:
        await self._finish(commit=True)

    async def _rollback(self) -> None:
        await self._finish(commit=False)

    async def _savepoint(self) -> Any:
        return await (await self.session.connection()).savepoint()

    async def _release_savepoint(self, savepoint: Any) -> None:
        await (await self.session.connection()).release_savepoint(savepoint)

    async def _rollback_savepoint(self, savepoint: Any) -> None:
        await (await self.session.connection()).rollback_to_savepoint(savepoint)
