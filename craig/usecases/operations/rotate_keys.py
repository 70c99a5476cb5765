"""Key rotation: re-encrypt every encrypted column under the newest key, in batches.

Run it after every instance has the new key ring (``new:KEY,old:KEY``): new writes already use
the new key and the old key still decrypts, so the application keeps working while it runs.
Each batch is its own short transaction; a value already in the newest format under the newest
key is never rewritten, so a rotation can be interrupted and run again. Older values (another
key, the format before values were bound to their row, or legacy plaintext) are rewritten for
their own cell. A value that cannot be decrypted (its key is missing from the ring, it was
tampered with or copied from another row) is left as it is and counted.

A rotation is an operator's action and is audited: one ``keys_rotate`` entry (the role
``operator``, the operating-system user's name, the newest key's id) is written in a
transaction of its own BEFORE the first batch. The batches are many transactions, none of which
is the whole rotation, so the entry records the attempt: it stays visible when the rotation is
interrupted or fails, and a rotation whose entry cannot be written does not start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from craig.domain.audit import AuditAction
from craig.ports.key_rotation import EncryptedColumn, EncryptedColumnStore, Rekeyer
from craig.usecases.audit.record import AuditWork, operator_entry, record_alone
from craig.usecases.audit.resource_types import FIELD_KEY


@attrs.frozen
class Progress:
    column: EncryptedColumn
    done: int
    total: int


@attrs.frozen
class ColumnReport:
    column: EncryptedColumn
    rewritten: int
    undecryptable: int
    #: Values still not under the newest key after the pass (written by an instance that still
    #: runs with an old ring, or undecryptable). Zero means the old keys may be retired.
    remaining: int


class RotateKeys:
    def __init__(
        self,
        store: EncryptedColumnStore,
        rekeyer: Rekeyer,
        columns: Sequence[EncryptedColumn],
        batch_size: int,
        uow_factory: Callable[[], AuditWork] | None = None,
    ) -> None:
        """``uow_factory`` is where the ``keys_rotate`` entry is written; None (a test of the
        rotation alone) writes none."""
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self.store = store
        self.rekeyer = rekeyer
        self.columns = list(columns)
        self.batch_size = batch_size
        self.uow_factory = uow_factory

    async def __call__(self, progress: Callable[[Progress], None] = lambda _: None) -> list[ColumnReport]:
        if self.uow_factory is not None:
            entry = operator_entry(AuditAction.KEYS_ROTATE, FIELD_KEY, self.rekeyer.current_key_id)
            await record_alone(self.uow_factory(), entry)
        return [await self._rotate(column, progress) for column in self.columns]

    async def _rotate(self, column: EncryptedColumn, progress: Callable[[Progress], None]) -> ColumnReport:
        prefix = self.rekeyer.current_prefix
        total = await self.store.count_stale(column, prefix)
        failures = 0

        def rekey(row_key: Any, stored: str | bytes) -> str | None:
            nonlocal failures
            try:
                return self.rekeyer.reencrypt(stored, column.context(row_key))
            except ValueError:
                failures += 1
                return None

        done, rewritten, after = 0, 0, None
        progress(Progress(column, 0, total))
        while True:
            batch = await self.store.rekey_batch(column, prefix, after, self.batch_size, rekey)
            if batch.scanned == 0:
                break
            done += batch.scanned
            rewritten += batch.rewritten
            after = batch.last_key
            progress(Progress(column, done, max(total, done)))
            if batch.scanned < self.batch_size:
                break
        remaining = await self.store.count_stale(column, prefix)
        return ColumnReport(column, rewritten=rewritten, undecryptable=failures, remaining=remaining)
