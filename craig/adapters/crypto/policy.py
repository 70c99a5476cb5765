"""``encryption_mode``: ``EncryptionMode``, ``encrypt_field`` and the startup selection.

* ``required`` (the default): a key must load, or startup refuses.
* ``optional``: a key is used when one is set; with none, fields are stored as plaintext and an
  info line says so.

A key that is *set* but malformed refuses startup in both modes: silently falling back to
plaintext because of a typo would defeat the point of setting a key.

Reading plaintext where ciphertext belongs is refused in ``required`` mode, except in the
columns that held plaintext before they were encrypted (``plaintext_columns``): their rows
written before that stay readable until ``craig keys rotate`` encrypts them.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Collection
from typing import Literal

import structlog

from craig.adapters.crypto.aesgcm import FieldEncryptor, KeyLoadError, is_encrypted
from craig.ports.cipher import FieldCipher, FieldContext
from craig.ports.errors import UndecryptableData

log = structlog.get_logger(__name__)

Mode = Literal["required", "optional"]


class EncryptionUnavailable(Exception):
    """Startup must refuse: ``encryption_mode=required`` and no usable key."""


class EncryptionInvariantViolated(RuntimeError):
    """``encrypt_field`` was asked to store plaintext although encryption is required."""


def key_problem(mode: str, key_setting: str) -> str | None:
    """The one-line startup refusal for this mode and key setting, or None when they are usable."""
    if not key_setting.strip() and mode != "required":
        return None
    try:
        FieldEncryptor.from_setting(key_setting)
    except KeyLoadError as error:
        return f"encryption_mode={mode} but CRAIG_FIELD_ENCRYPTION_KEY load failed: {error}"
    return None


def load_encryptor(mode: str, key_setting: str) -> FieldEncryptor | None:
    """The four-way match on (mode, key); raises :class:`EncryptionUnavailable`."""
    problem = key_problem(mode, key_setting)
    if problem:
        raise EncryptionUnavailable(problem)
    if not key_setting.strip():
        log.info("field encryption disabled (mode=optional, no key set)")
        return None
    encryptor = FieldEncryptor.from_setting(key_setting)
    log.info(f"field encryption enabled (mode={mode})", key_id=encryptor.current_key_id)
    return encryptor


def encrypt_field(encryptor: FieldEncryptor | None, mode: str, value: str, context: FieldContext) -> str:
    """Encrypt with the key; plaintext only when the mode is optional."""
    if encryptor is not None:
        return encryptor.encrypt(value, context)
    _check_plaintext_allowed(mode)
    return value


def _check_plaintext_allowed(mode: str) -> None:
    if mode == "required":
        raise EncryptionInvariantViolated(
            "encryption_mode=required but no encryptor available — startup invariant violated"
        )


#: Without a key (``optional`` mode) the values themselves are stored in clear, so their index
#: is an unkeyed digest; ``craig keys rotate`` re-indexes it once a key is set.
PLAIN_INDEX_PREFIX = "bi0:"


def _plain_index(purpose: str, value: str) -> str:
    message = len(purpose).to_bytes(4, "big") + purpose.encode("utf-8") + value.encode("utf-8")
    digest = hashlib.sha256(message).digest()
    return PLAIN_INDEX_PREFIX + base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


class ModeCipher(FieldCipher):
    """The field cipher repositories use: ``encrypt_field`` on writes, and on reads the key ring,
    or plaintext: written while no key was set (only when the mode is optional), or stored before
    its column was encrypted (``plaintext_columns``: ``(table, column)`` pairs, either mode)."""

    def __init__(
        self, encryptor: FieldEncryptor | None, mode: str, plaintext_columns: Collection[tuple[str, str]] = ()
    ) -> None:
        self.encryptor = encryptor
        self.mode = str(mode)
        self.plaintext_columns = frozenset(plaintext_columns)

    def encrypt(self, plaintext: str, context: FieldContext) -> str:
        return encrypt_field(self.encryptor, self.mode, plaintext, context)

    def encrypt_bytes(self, plaintext: bytes, context: FieldContext) -> bytes:
        if self.encryptor is not None:
            return self.encryptor.encrypt_bytes(plaintext, context)
        _check_plaintext_allowed(self.mode)
        return plaintext

    def decrypt(self, stored: str, context: FieldContext) -> str:
        if is_encrypted(stored):
            return self._encryptor().decrypt(stored, context)
        self._check_plaintext_readable(context)
        return stored

    def decrypt_bytes(self, stored: bytes, context: FieldContext) -> bytes:
        if is_encrypted(stored):
            return self._encryptor().decrypt_bytes(stored, context)
        self._check_plaintext_readable(context)
        return stored

    @property
    def blind_index_prefix(self) -> str:
        return self.encryptor.blind_index_prefix if self.encryptor is not None else PLAIN_INDEX_PREFIX

    def blind_index(self, purpose: str, value: str) -> str:
        if self.encryptor is not None:
            return self.encryptor.blind_index(purpose, value)
        return _plain_index(purpose, value)

    def blind_index_candidates(self, purpose: str, value: str) -> list[str]:
        if self.encryptor is not None:
            return self.encryptor.blind_index_candidates(purpose, value)
        return [_plain_index(purpose, value)]

    def _encryptor(self) -> FieldEncryptor:
        if self.encryptor is None:
            raise UndecryptableData("value is encrypted but CRAIG_FIELD_ENCRYPTION_KEY is not set")
        return self.encryptor

    def _check_plaintext_readable(self, context: FieldContext) -> None:
        if self.mode == "required" and (context.table, context.column) not in self.plaintext_columns:
            raise UndecryptableData(
                f"stored value of {context.table}.{context.column} is not encrypted although "
                "encryption_mode=required; run `craig keys rotate` to encrypt values written while encryption was off"
            )
