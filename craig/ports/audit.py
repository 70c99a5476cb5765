"""Ports of the audit trail: recording and reading entries inside a unit of work
(:class:`AuditRepository`, ``uow.audit``), recording entries on their own (:class:`AuditLog`),
and the hash chain's own side (:class:`AuditChainStore`): sealing, verification, the retention
floor and purging.

Entries are append-only where they are stored: the PostgreSQL adapter's tables refuse UPDATE
and TRUNCATE from every role, and DELETE of any entry younger than the retention floor.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID

import attrs

from craig.domain.audit import AuditEntry
from craig.domain.audit_chain import ChainHead, ChainLink, ChainStart
from craig.domain.audit_query import AuditCursor, AuditFilter, AuditPage


class AuditRepository(Protocol):
    """``uow.audit``. Every method runs in the unit of work's transaction."""

    async def append(self, entries: Sequence[AuditEntry]) -> list[AuditEntry]:
        """Write ``entries`` in the unit of work's transaction: they exist exactly when, and if,
        it commits. ``at`` becomes the database clock's time of the transaction and ``seq``
        stays None until the sealer chains the entry; whatever the caller put there is ignored.
        Plain inserts: no lock another transaction could wait on, no shared counter, so two
        requests never wait on each other to be audited. Returns the entries as stored. An id
        that already exists raises :class:`craig.ports.errors.ConstraintViolation`."""
        ...

    async def list(self, where: AuditFilter, limit: int, cursor: AuditCursor | None = None) -> AuditPage:
        """Entries matching ``where``, newest first by ``(at, id)``; with ``cursor``, only those
        strictly after it in that order. At most ``limit``; ``next_cursor`` when more remain.
        Unsealed entries are included (``seq`` None)."""
        ...

    async def case_history(self, case_id: UUID, limit: int, cursor: AuditCursor | None = None) -> AuditPage:
        """What changed in one case and in its contacts, attachments and placements: its entries
        (``case_id``) whose action is not a read or a list, newest first, paged like :meth:`list`."""
        ...


class AuditLog(Protocol):
    """Entries recorded on their own, outside any unit of work: for an answer no use case runs
    for (an idempotent replay, whose stored response is served again)."""

    async def append(self, entries: Sequence[AuditEntry]) -> None:
        """Write ``entries`` in a transaction of their own: all of them or none, committed when
        this returns. What :meth:`AuditRepository.append` says of ``at``, ``seq``, locks and
        ids holds here too."""
        ...


@attrs.frozen
class SealedBatch:
    sealed: int
    #: The chain's head after the batch (unchanged when nothing was sealed; None: still empty).
    head: ChainHead | None


@attrs.frozen
class PendingEntries:
    """Committed entries not in the chain yet."""

    count: int
    oldest_at: datetime | None


@attrs.frozen
class RetentionFloor:
    """The shortest retention the store itself enforces, when it was set, and whether it was
    ever lowered (only the database owner can, outside the application)."""

    retention: timedelta
    set_at: datetime
    ever_lowered: bool = False


class AuditChainStore(Protocol):
    """The hash chain. Each method is its own short transaction (never a request's).

    Chain links are append-only: ``seq`` contiguous from the first kept link, each link
    following the one before it (see :mod:`craig.domain.audit_chain`).
    """

    async def seal_pending(self, batch_size: int) -> SealedBatch:
        """Append up to ``batch_size`` committed, unsealed entries to the chain in one
        transaction, in a deterministic order (their transactions' order, then ``at``, then
        ``id``). Sealers are serialized: two at once never fork the chain; the second continues
        from the first one's head. An entry whose transaction commits after later entries were
        sealed is sealed by the next call, never skipped. Needs no UPDATE of anything."""
        ...

    async def head(self) -> ChainHead | None:
        """The newest link, or None when nothing was ever sealed."""
        ...

    async def start(self) -> ChainStart:
        """Where the kept chain begins: seq 1 after the genesis hash, or, after a purge, the seq
        after the last purged link and that link's hash (from the store's purge record)."""
        ...

    async def count_links(self) -> int:
        """Links in the chain (for progress)."""
        ...

    async def links(self, after_seq: int, limit: int) -> list[ChainLink]:
        """Up to ``limit`` links with ``seq > after_seq``, in seq order, each with its entry
        (None when the entry it names is missing)."""
        ...

    async def link_at(self, seq: int) -> ChainLink | None:
        """The link at ``seq``, with its entry."""
        ...

    async def seq_of_hash(self, digest: bytes) -> int | None:
        """The seq of the link whose hash is ``digest``, or None."""
        ...

    async def pending(self) -> PendingEntries:
        """Committed entries that are not in the chain (reads every entry: for verification)."""
        ...

    async def retention_floor(self) -> RetentionFloor:
        """The retention the store enforces: it refuses to delete a younger entry or link."""
        ...

    async def raise_retention_floor(self, retention: timedelta) -> RetentionFloor:
        """Make the floor at least ``retention``; a shorter one is ignored (only the database
        owner can lower it). Returns the floor in force."""
        ...

    async def purge(self, older_than: timedelta, batch_size: int) -> int:
        """Delete up to ``batch_size`` of the oldest links and their entries, in seq order,
        stopping at the first link whose entry or sealing is younger than ``older_than`` or the
        floor (whichever is longer), and never the newest link. Records the last purged link's
        seq and hash so the chain stays verifiable from the first kept link. Returns the
        entries deleted."""
        ...


class HasAudit(Protocol):
    """A unit of work with ``audit`` (an :class:`AuditRepository` on its transaction)."""

    @property
    def audit(self) -> AuditRepository: ...
