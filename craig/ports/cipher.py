"""Field encryption port: sensitive columns go through it on every write and every read."""

from __future__ import annotations

from typing import Protocol

import attrs


@attrs.frozen
class FieldContext:
    """Where a value is stored: its table, its column and its row's key (as text).

    Ciphertext is bound to it, so a value copied to another row, column or table does not
    decrypt there. The row id must be what the row's key column holds, spelt as ``str`` spells
    it (a UUID in its canonical form, an idempotency cache key as it is): ``craig keys rotate``
    rebuilds the context from the key column.
    """

    table: str
    column: str
    row_id: str

    @classmethod
    def of(cls, table: str, column: str, row_id: object) -> FieldContext:
        return cls(table, column, str(row_id))


class FieldCipher(Protocol):
    """Encrypts sensitive fields before they reach storage.

    Repositories call it on every write of a sensitive column and on every read, so plaintext
    never lands in a table. ``context`` is the cell the value is stored in; the stored form is
    ASCII text (``*_bytes`` take and give bytes for binary columns, in the same format).

    ``decrypt`` raises :class:`craig.ports.errors.UndecryptableData` (a ``ValueError``) when the
    value was tampered with, belongs to another cell, names a key the ring lacks, or is plaintext
    where only ciphertext is accepted. It never returns a value that did not authenticate.
    """

    def encrypt(self, plaintext: str, context: FieldContext) -> str: ...

    def decrypt(self, stored: str, context: FieldContext) -> str: ...

    def encrypt_bytes(self, plaintext: bytes, context: FieldContext) -> bytes: ...

    def decrypt_bytes(self, stored: bytes, context: FieldContext) -> bytes: ...

    def blind_index(self, purpose: str, value: str) -> str:
        """A keyed digest of ``value`` (HMAC-SHA-256 under a key derived from the newest key of
        the ring, separate per ``purpose``), to find rows by an encrypted value without
        decrypting them: equal values give equal digests under one key. The stored form names
        the key, like ciphertext does (``bi1:<key id>:<digest>``)."""
        ...

    def blind_index_candidates(self, purpose: str, value: str) -> list[str]:
        """:meth:`blind_index` of ``value`` under every key of the ring, newest first: what a
        lookup compares, so rows indexed before a rotation are still found."""
        ...

    @property
    def blind_index_prefix(self) -> str:
        """Every digest made under the newest key starts with this (rows that do not are
        re-indexed by ``craig keys rotate``)."""
        ...
