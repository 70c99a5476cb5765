"""Use case: the attachment scanner (``AttachmentScanner``): reconcile rows and blobs both ways.

For each registered table, every pass:

* each ``pending`` row older than ``grace`` (database clock): HEAD its object.
  Found with the recorded size -> ``present``. Not found -> the row is deleted and
  ``*.upload_failed`` staged (one transaction; of two scanners only one deletes, so only one
  event). Found with ANOTHER size -> ``failed`` and ``*.upload_failed``: the row and the object
  are kept for an operator, and never served. A store error -> the row is left as it is and the
  pass stops for that table; the next pass retries. A store that refuses ONE row's object for
  good (access denied to that object, a key it will not take) -> that row stays ``pending``, is
  logged with its id, and the pass goes on with the next rows. Passes walk the pending rows in
  order and resume after the last row looked at, starting again from the oldest once past the
  end, so however many rows the store refuses, the ones after them are reached and a refused
  row is asked again once a round. After ``ATTACHMENT_SCAN_MAX_REFUSALS`` refusals in a pass
  (the store may refuse every object: wrong credentials, no bucket) the rows wait for the next
  pass.
* objects under the table's prefix with no row, last modified before ``now - grace`` -> deleted.
  Rows are committed before their blob is put (Phase 1), so an object without a row can only
  be left over (a put that "failed" but landed, a deleted contact), never in flight. The sweep
  examines a bounded number of keys per pass and resumes where it stopped.

No transaction is held while the object store is called.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID

import attrs
import structlog

from craig.domain.attachments import CONTACT_OBJECT_PREFIX
from craig.domain.constants import (
    ATTACHMENT_ORPHAN_CHECK_BATCH,
    ATTACHMENT_ORPHAN_SWEEP_KEYS_PER_PASS,
    ATTACHMENT_SCAN_BATCH_SIZE,
    ATTACHMENT_SCAN_MAX_REFUSALS,
)
from craig.domain.events import EventEnvelope
from craig.ports.cases import HasAttachments
from craig.ports.clock import Clock
from craig.ports.errors import ObjectStoreDefect, ObjectStoreUnavailable
from craig.ports.object_rows import ObjectRows, PendingObject, PendingStats
from craig.ports.object_store import InvalidObjectKey, ObjectStore, StoredObject
from craig.ports.outbox import HasOutbox
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.attachments.events import upload_failed_event
from craig.usecases.audit.resource_types import ATTACHMENT
from craig.usecases.events.staging import stage_event

log = structlog.get_logger(__name__)

#: ``failed_event(row, reason, now)``: the table's ``*.upload_failed`` event.
FailedEvent = Callable[[PendingObject, str, datetime], EventEnvelope]


class AttachmentScannerWork(UnitOfWork, HasOutbox, HasAttachments, Protocol):
    """The unit of work :class:`AttachmentScanner` uses."""


@attrs.frozen
class ScannedTable:
    """A table whose rows point at blobs: how to reach its rows, under which key prefix its
    blobs live, and which failure event it stages."""

    name: str
    prefix: str
    rows: Callable[[AttachmentScannerWork], ObjectRows]
    failed_event: FailedEvent
    #: The audit trail's ``resource_type`` of its rows (an operator's discard is recorded so).
    resource_type: str


@attrs.define
class ScanReport:
    present: int = 0
    missing: int = 0
    mismatched: int = 0
    store_errors: int = 0
    orphans_removed: int = 0
    more: bool = False  # a full batch of pending rows: run again at once


class AttachmentScanner:
    def __init__(
        self,
        object_store: ObjectStore,
        uow_factory: Callable[[], AttachmentScannerWork],
        clock: Clock,
        grace: timedelta,
        tables: Sequence[ScannedTable],
        *,
        batch_size: int = ATTACHMENT_SCAN_BATCH_SIZE,
        sweep_keys_per_pass: int = ATTACHMENT_ORPHAN_SWEEP_KEYS_PER_PASS,
    ) -> None:
        self.object_store = object_store
        self.uow_factory = uow_factory
        self.clock = clock
        self.grace = grace
        self.tables = tables
        self.batch_size = batch_size
        self.sweep_keys_per_pass = sweep_keys_per_pass
        self._sweep_cursors: dict[str, str | None] = {}
        #: Per table, the last pending row looked at (``created_at``, ``id``); None: the oldest next.
        self._pending_cursors: dict[str, tuple[datetime, UUID] | None] = {}

    async def run_once(self) -> ScanReport:
        """One pass over every registered table."""
        report = ScanReport()
        for table in self.tables:
            if await self._reconcile_pending(table, report):
                await self._sweep_orphans(table, report)
        return report

    async def backlog(self) -> dict[str, PendingStats]:
        """Pending figures per table (metrics, ``craig status``)."""
        stats = {}
        for table in self.tables:
            uow = self.uow_factory()
            async with uow:
                stats[table.name] = await table.rows(uow).pending_stats()
        return stats

    async def _reconcile_pending(self, table: ScannedTable, report: ScanReport) -> bool:
        """False when the store failed (the rest waits for the next pass)."""
        uow = self.uow_factory()
        async with uow:
            after = self._pending_cursors.get(table.name)
            pending = await table.rows(uow).pending_older_than(self.grace, self.batch_size, after)
        full = len(pending) >= self.batch_size
        stopped = False  # the pass ends early: the next one goes on after the last row looked at
        try:
            refusals = 0
            bucket_seen = False
            for row in pending:
                try:
                    size = await self.object_store.head(row.object_key)
                except ObjectStoreUnavailable as error:
                    report.store_errors += 1
                    log.warning("scanner: object store error; retrying next pass", table=table.name, error=str(error))
                    report.more, stopped = False, True
                    return False
                except (ObjectStoreDefect, InvalidObjectKey) as error:
                    refusals += 1
                    report.store_errors += 1
                    log.error(
                        "scanner: the object store refuses this row's object; the row stays pending",
                        table=table.name,
                        row_id=str(row.id),
                        error=str(error),
                    )
                    after = (row.created_at, row.id)
                    if refusals >= ATTACHMENT_SCAN_MAX_REFUSALS:
                        # Perhaps every object is refused: the rest waits for the next pass.
                        log.error("scanner: the object store refused many objects; the rest waits", table=table.name)
                        stopped = True
                        return True
                    continue
                if size is None and not bucket_seen:
                    # S3 answers a HEAD with a bare 404 for a missing bucket as for a missing
                    # object: before the first row is deleted as never stored, the store must
                    # show that it still has its bucket (not so once the bucket was removed).
                    try:
                        await self.object_store.ping()
                    except (ObjectStoreUnavailable, ObjectStoreDefect) as error:
                        report.store_errors += 1
                        log.error(
                            "scanner: the store cannot show its bucket; nothing deleted",
                            table=table.name,
                            error=str(error),
                        )
                        report.more, stopped = False, True
                        return False
                    bucket_seen = True
                await self._settle(table, uow, row, size, report)
                after = (row.created_at, row.id)
            report.more = report.more or full
            return True
        finally:
            # A full batch, or a pass stopped early, resumes after the last row looked at; past
            # the end, the next pass starts from the oldest again (a refused row is asked again).
            self._pending_cursors[table.name] = after if stopped or full else None

    async def _settle(
        self, table: ScannedTable, uow: AttachmentScannerWork, row: PendingObject, size: int | None, report: ScanReport
    ) -> None:
        async with uow:
            rows = table.rows(uow)
            if size == row.size:
                report.present += await rows.mark_present(row.id)
                await uow.commit()
                return
            if size is None:
                reason = "the object was never stored"
                settled = await rows.delete_pending(row.id)
                report.missing += settled
            else:
                reason = f"the stored object has {size} bytes, the row records {row.size}"
                settled = await rows.mark_failed(row.id)
                report.mismatched += settled
                log.error("scanner: size mismatch", table=table.name, row_id=str(row.id), reason=reason)
            if settled:
                await stage_event(uow, table.failed_event(row, reason, self.clock.now()))
            await uow.commit()

    async def _sweep_orphans(self, table: ScannedTable, report: ScanReport) -> None:
        try:
            await self._sweep(table, report)
        except ObjectStoreUnavailable as error:
            report.store_errors += 1
            log.warning("scanner: orphan sweep interrupted; resuming next pass", table=table.name, error=str(error))

    async def _sweep(self, table: ScannedTable, report: ScanReport) -> None:
        cutoff = self.clock.now() - self.grace
        start_after = self._sweep_cursors.get(table.name)
        examined, last_key = 0, None
        candidates: list[StoredObject] = []
        listing = self.object_store.list(table.prefix, start_after=start_after)
        async with contextlib.aclosing(listing):
            async for stored in listing:
                examined, last_key = examined + 1, stored.key
                if stored.last_modified < cutoff:
                    candidates.append(stored)
                if len(candidates) >= ATTACHMENT_ORPHAN_CHECK_BATCH:
                    await self._remove_orphans(table, candidates, report)
                    candidates = []
                if examined >= self.sweep_keys_per_pass:
                    break
        await self._remove_orphans(table, candidates, report)
        finished = examined < self.sweep_keys_per_pass
        self._sweep_cursors[table.name] = None if finished else last_key

    async def _remove_orphans(
        self, table: ScannedTable, candidates: Sequence[StoredObject], report: ScanReport
    ) -> None:
        if not candidates:
            return
        uow = self.uow_factory()
        async with uow:
            known = await table.rows(uow).known_object_keys([c.key for c in candidates])
        for stored in candidates:
            if stored.key not in known:
                await self.object_store.delete(stored.key)
                report.orphans_removed += 1
                log.info("scanner: orphan removed", table=table.name, key=stored.key, size=stored.size)


def _contact_attachment_failed(row: PendingObject, reason: str, now: datetime) -> EventEnvelope:
    return upload_failed_event(row.id, row.parent_id, reason, now)


CONTACT_ATTACHMENTS = ScannedTable(
    name="contact_attachments",
    prefix=CONTACT_OBJECT_PREFIX,
    rows=lambda uow: uow.attachments,
    failed_event=_contact_attachment_failed,
    resource_type=ATTACHMENT,
)
#: Every table the scanner reconciles; a feature storing blobs the same way adds its own.
REGISTERED_TABLES: tuple[ScannedTable, ...] = (CONTACT_ATTACHMENTS,)
