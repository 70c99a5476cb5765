"""Rows that point at blobs written in two phases (``object_status``), as the scanner sees them.

A table registers with the attachment scanner by offering this port on the unit of work
(``contact_attachments`` is ``uow.attachments``); the scanner needs nothing else of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID

import attrs


@attrs.frozen
class PendingObject:
    """A row the scanner or an operator looks at (``pending``, or ``failed``): its id, where its
    blob should be, and what size it must have."""

    id: UUID
    parent_id: UUID
    object_key: str
    size: int
    created_at: datetime
    #: The case the row belongs to, where the table knows one: set by :meth:`ObjectRows.failed_rows`
    #: and :meth:`ObjectRows.delete_failed` (an operator's discard shows in the case's history).
    case_id: UUID | None = None


@attrs.frozen
class PendingStats:
    pending: int
    oldest_pending_created_at: datetime | None
    now: datetime
    #: Rows the scanner failed (their object is not what the upload declared), kept for an operator.
    failed: int = 0


class ObjectRows(Protocol):
    """Every method runs in the unit of work's transaction; the caller commits."""

    async def pending_older_than(
        self, grace: timedelta, limit: int, after: tuple[datetime, UUID] | None = None
    ) -> Sequence[PendingObject]:
        """Up to ``limit`` ``pending`` rows created before the DATABASE clock's ``now - grace``,
        oldest first (by ``created_at``, then ``id``), after the row ``after`` names when given."""
        ...

    async def mark_present(self, row_id: UUID) -> bool:
        """``pending`` -> ``present``; False when the row is gone or no longer pending."""
        ...

    async def mark_failed(self, row_id: UUID) -> bool:
        """``pending`` -> ``failed``; False when the row is gone or no longer pending."""
        ...

    async def delete_pending(self, row_id: UUID) -> bool:
        """Delete the row if it is still ``pending``. Of concurrent callers exactly one gets True,
        so exactly one stages the failure event."""
        ...

    async def failed_rows(self, limit: int) -> Sequence[PendingObject]:
        """Up to ``limit`` ``failed`` rows, oldest first (what ``craig attachments failed`` lists)."""
        ...

    async def failed_row(self, row_id: UUID) -> PendingObject | None:
        """The row if it is ``failed`` (a state it leaves only by being deleted), else None."""
        ...

    async def delete_failed(self, row_id: UUID) -> PendingObject | None:
        """Delete the row if it is ``failed`` and return it (its blob is the caller's to remove);
        None when it is not (gone, or another status). Of concurrent callers exactly one gets it."""
        ...

    async def known_object_keys(self, keys: Sequence[str]) -> set[str]:
        """Those of ``keys`` that some row (any status) points at."""
        ...

    async def pending_stats(self) -> PendingStats:
        """The ``pending`` backlog, and the ``failed`` rows, for metrics and ``craig status``
        (``now`` is the database clock; partial indexes on pending and failed rows serve it)."""
        ...
