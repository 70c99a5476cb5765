"""The unit of work: one database transaction, and the repositories that act inside it."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self

if TYPE_CHECKING:
    from craig.ports.audit import AuditRepository
    from craig.ports.cases import AttachmentRepository, CaseRepository, ContactRepository
    from craig.ports.exchange import (
        PartnerRateLimits,
        PartnerRepository,
        SendJobRepository,
        TransactionRepository,
    )
    from craig.ports.idempotency import IdempotencySlots
    from craig.ports.inbox import InboxRepository
    from craig.ports.intake import ReferralRepository
    from craig.ports.outbox import OutboxWriter
    from craig.ports.placements import FosterHomeRepository, PlacementRepository
    from craig.ports.rules import RuleSetRepository


class UnitOfWork(Protocol):
    """An async context manager around one transaction.

    Contract:

    * ``async with uow:`` opens a block. The outermost block begins a transaction; a nested
      block (or a block opened while a held commit is pending, see below) is a savepoint.
    * ``await uow.commit()`` makes the block's writes part of the transaction's result.
      Leaving a block without ``commit()`` rolls that block back, exception or not.
    * The *owner* of a request (the HTTP idempotency layer) may call :meth:`hold_commits`.
      From then on the outermost ``commit()`` does not COMMIT: the transaction stays open so
      the owner can add its own writes (the stored idempotent response) and :meth:`release`
      everything atomically. A use case never knows whether its commit is held.
    * ``commit(immediately=True)`` commits for real even while commits are held. It is for
      two-phase protocols whose first phase must be durable before an external side effect
      (attachment upload, Phase 1).
    * ``after_commit(callback)`` runs ``callback`` once the transaction has really committed
      (after a held commit, at ``release(commit=True)``); it is dropped when the block that
      registered it rolls back. For in-process effects that must not outlive a rollback
      (a cache entry).
    * Repositories may only be used inside a block. Errors are :mod:`craig.ports.errors`.
    """

    outbox: OutboxWriter
    inbox: InboxRepository
    idempotency: IdempotencySlots
    cases: CaseRepository
    contacts: ContactRepository
    attachments: AttachmentRepository
    foster_homes: FosterHomeRepository
    placements: PlacementRepository
    partners: PartnerRepository
    exchange_transactions: TransactionRepository
    send_jobs: SendJobRepository
    partner_rate_limits: PartnerRateLimits
    referrals: ReferralRepository
    rule_sets: RuleSetRepository
    audit: AuditRepository

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    async def commit(self, *, immediately: bool = False) -> None: ...

    def hold_commits(self) -> None: ...

    def after_commit(self, callback: Callable[[], object]) -> None: ...

    async def release(self, *, commit: bool) -> None:
        """End a held transaction: COMMIT it (``commit=True``) or roll it back. Idempotent."""
        ...

    @property
    def has_pending_commit(self) -> bool:
        """True when a held commit is waiting for :meth:`release`."""
        ...


UnitOfWorkFactory = Callable[[], UnitOfWork]
