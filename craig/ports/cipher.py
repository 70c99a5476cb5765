"""Field encryption port (seed: ``FieldEncryptor`` / ``encrypt_field``)."""

from __future__ import annotations

from typing import Protocol


class FieldCipher(Protocol):
    """Encrypts sensitive text fields before they reach storage.

    Repositories call it on every write of a sensitive column and on every read, so plaintext
    never lands in a table. ``decrypt`` raises ``ValueError`` on tampered or unknown data.
    """

    def encrypt(self, plaintext: str) -> str: ...

    def decrypt(self, stored: str) -> str: ...
