"""The cipher of ``encryption_mode=optional`` without a key: values are stored as given."""

from __future__ import annotations

from craig.ports.cipher import FieldCipher


class PlaintextCipher(FieldCipher):
    def encrypt(self, plaintext: str) -> str:
        return plaintext

    def decrypt(self, stored: str) -> str:
        return stored
