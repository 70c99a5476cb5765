"""Ports of field-key rotation (``craig keys rotate``): re-encrypting stored ciphertext."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import attrs

from craig.ports.cipher import FieldContext


@attrs.frozen
class EncryptedColumn:
    """A sensitive column: its table, the table's (sortable, unique) key column, and its name.

    ``binary``: the column is ``BYTEA`` (the ciphertext is stored as its ASCII bytes).
    ``plaintext_history``: the column held plaintext before it was encrypted, so rows written
    before then are read as they are (in either encryption mode) until rotation encrypts them.
    """

    table: str
    key: str
    column: str
    binary: bool = False
    plaintext_history: bool = False

    def context(self, row_key: object) -> FieldContext:
        """The cell of the row whose key column holds ``row_key``."""
        return FieldContext.of(self.table, self.column, row_key)

    def __str__(self) -> str:
        return f"{self.table}.{self.column}"


@attrs.frozen
class RekeyedBatch:
    scanned: int
    rewritten: int
    #: The key of the last row scanned: the next batch starts after it. None when none was.
    last_key: Any


#: Turns a row's key and its stored value (``bytes`` for a binary column) into the value's
#: re-encrypted form (text; its ASCII bytes for a binary column), or None to leave the row as it is.
Rekey = Callable[[Any, str | bytes], str | None]


class Rekeyer(Protocol):
    """The field cipher's rotation side (implemented by the AES-GCM key ring)."""

    @property
    def current_key_id(self) -> str:
        """The newest key's id (what new values are encrypted under)."""
        ...

    @property
    def current_prefix(self) -> str:
        """Every value encrypted under the newest key starts with this."""
        ...

    def reencrypt(self, stored: str | bytes, context: FieldContext) -> str:
        """``stored`` (ciphertext of any format version under any key of the ring, or legacy
        plaintext) encrypted for ``context`` in the newest format under the newest key; a value
        already so is returned as it is once it authenticates. Raises
        :class:`craig.ports.errors.UndecryptableData` (a ``ValueError``) when it cannot be
        decrypted."""
        ...


class EncryptedColumnStore(Protocol):
    """Reads and rewrites encrypted columns in batches, each batch its own transaction."""

    async def count_stale(self, column: EncryptedColumn, current_prefix: str) -> int:
        """Rows whose value is not NULL and does not start with ``current_prefix`` (its ASCII
        bytes for a binary column)."""
        ...

    async def rekey_batch(
        self, column: EncryptedColumn, current_prefix: str, after: Any, limit: int, rekey: Rekey
    ) -> RekeyedBatch:
        """Lock up to ``limit`` stale rows with a key greater than ``after`` (all when None), in
        key order, rewrite each with ``rekey(key, value)`` and commit. A concurrent writer of one of those
        rows waits for the batch, so no update is lost."""
        ...
