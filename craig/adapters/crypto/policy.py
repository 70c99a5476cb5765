"""``encryption_mode`` (seed: ``EncryptionMode``, ``encrypt_field`` and the startup selection).

* ``required`` (the default): a key must load, or startup refuses with the seed's message.
* ``optional``: a key is used when one is set; with none, fields are stored as plaintext and an
  info line says so.

A key that is *set* but malformed refuses startup in both modes: silently falling back to
plaintext because of a typo would defeat the point of setting a key.
"""

from __future__ import annotations

from typing import Literal

import structlog

from craig.adapters.crypto.aesgcm import FieldEncryptor, KeyLoadError, is_encrypted
from craig.ports.cipher import FieldCipher

log = structlog.get_logger(__name__)

Mode = Literal["required", "optional"]


class EncryptionUnavailable(Exception):
    """Startup must refuse: ``encryption_mode=required`` and no usable key (the seed's message)."""


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
    """The seed's four-way match on (mode, key); raises :class:`EncryptionUnavailable`."""
    problem = key_problem(mode, key_setting)
    if problem:
        raise EncryptionUnavailable(problem)
    if not key_setting.strip():
        log.info("field encryption disabled (mode=optional, no key set)")
        return None
    encryptor = FieldEncryptor.from_setting(key_setting)
    log.info(f"field encryption enabled (mode={mode})", key_id=encryptor.current_key_id)
    return encryptor


def encrypt_field(encryptor: FieldEncryptor | None, mode: str, value: str) -> str:
    """Seed ``encrypt_field``: encrypt with the key; plaintext only when the mode is optional."""
    if encryptor is not None:
        return encryptor.encrypt(value)
    if mode == "required":
        raise EncryptionInvariantViolated(
            "encryption_mode=required but no encryptor available — startup invariant violated"
        )
    return value


class ModeCipher(FieldCipher):
    """The field cipher repositories use: ``encrypt_field`` on writes, and on reads the key ring,
    or (only when the mode is optional) the plaintext written while no key was set."""

    def __init__(self, encryptor: FieldEncryptor | None, mode: str) -> None:
        self.encryptor = encryptor
        self.mode = str(mode)

    def encrypt(self, plaintext: str) -> str:
        return encrypt_field(self.encryptor, self.mode, plaintext)

    def decrypt(self, stored: str) -> str:
        if is_encrypted(stored):
            if self.encryptor is None:
                raise ValueError("value is encrypted but CRAIG_FIELD_ENCRYPTION_KEY is not set")
            return self.encryptor.decrypt(stored)
        if self.mode == "required":
            raise ValueError(
                "stored value is not encrypted although encryption_mode=required; "
                "run `craig keys rotate` to encrypt values written while encryption was off"
            )
        return stored
