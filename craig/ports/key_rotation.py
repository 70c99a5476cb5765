"""Ports of field-key rotation (``craig keys rotate``): re-encrypting stored ciphertext."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import attrs


@attrs.frozen
class EncryptedColumn:
    """A sensitive column: its table, the table's (sortable, unique) key column, and its name."""

    table: str
    key: str
    column: str

    def __str__(self) -> str:
        return f"{self.table}.{self.column}"


@attrs.frozen
class RekeyedBatch:
    scanned: int
    rewritten: int
    #: The key of the last row scanned: the next batch starts after it. None when none was.
    last_key: Any


#: Turns a stored value into its re-encrypted form, or None to leave the row as it is.
Rekey = Callable[[str], str | None]


class Rekeyer(Protocol):
    """The field cipher's rotation side (implemented by the AES-GCM key ring)."""

    @property
    def current_prefix(self) -> str:
        """Every value encrypted under the newest key starts with this."""
        ...

    def reencrypt(self, stored: str) -> str:
        """``stored`` (ciphertext under any key of the ring, or legacy plaintext) encrypted under
        the newest key. Raises ``ValueError`` when it cannot be decrypted."""
        ...


class EncryptedColumnStore(Protocol):
    """Reads and rewrites encrypted columns in batches, each batch its own transaction."""

    async def count_stale(self, column: EncryptedColumn, current_prefix: str) -> int:
        """Rows whose value is not NULL and does not start with ``current_prefix``."""
        ...

    async def rekey_batch(
        self, column: EncryptedColumn, current_prefix: str, after: Any, limit: int, rekey: Rekey
    ) -> RekeyedBatch:
        """Lock up to ``limit`` stale rows with a key greater than ``after`` (all when None), in
        key order, rewrite each with ``rekey`` and commit. A concurrent writer of one of those
        rows waits for the batch, so no update is lost."""
        ...
