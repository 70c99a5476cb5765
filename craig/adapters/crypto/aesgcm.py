"""AES-256-GCM field encryption with a key ring.

Stored format (version 2, written), ASCII::

    enc:v2:<key id>:<base64url(nonce 12 bytes || ciphertext || tag 16 bytes)>

The key id names the key that encrypted the value, so a ring of keys can decrypt values written
before a rotation while every new value uses the newest key. Bound as associated data: the
version, the key id, and the cell the value is stored in (table, column, row id: a
:class:`~craig.ports.cipher.FieldContext`). Changing any byte of the stored value, its key id
included, fails the tag check, and so does reading it from any other row, column or table.

Version 1 (``enc:v1:...``, same layout) bound only the version and the key id. It is still
read, with the same tag check, and ``craig keys rotate`` rewrites it as version 2.

``CRAIG_FIELD_ENCRYPTION_KEY`` is either the base64 of 32 random bytes, or a comma-separated ring
``id:base64,id:base64`` with the newest key first. A key given without an id gets one derived from
the key (``k`` + 10 hex digits of a hash), so naming a key later does not orphan its values as long
as the same id is kept; ids are 1-32 of ``A-Z a-z 0-9 _ -``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import os
import re

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from craig.domain.constants import ASSOCIATED_DATA_HEADS_CACHED
from craig.ports.cipher import FieldCipher, FieldContext
from craig.ports.errors import UndecryptableData
from craig.ports.key_rotation import Rekeyer

PREFIX = "enc:"
#: The format new values are written in.
VERSION = "v2"
#: The format before values were bound to their cell: still read, never written.
LEGACY_VERSION = "v1"
#: Stored form of a blind index: ``bi1:<key id>:<base64url(HMAC-SHA-256)>``.
BLIND_INDEX_PREFIX = "bi1:"
NONCE_BYTES = 12
KEY_BYTES = 32
_KEY_ID = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_B64URL = re.compile(r"^[A-Za-z0-9_-]+$")
_B64URL_VALUES = {
    char: value for value, char in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
}
#: By the length of the last group (2 or 3 characters): the bits of its last character left over.
_UNUSED_BITS = {2: 0b1111, 3: 0b11}


class KeyLoadError(ValueError):
    """The key setting is missing or malformed; the message says which entry and why."""


def is_encrypted(stored: str | bytes) -> bool:
    return stored.startswith(PREFIX) if isinstance(stored, str) else stored.startswith(PREFIX.encode())


def associated_data(version: str, key_id: str, context: FieldContext) -> bytes:
    """What a value's tag authenticates besides the value. Version 2 length-prefixes every
    part, so no two (key id, table, column, row id) encode alike whatever characters they hold."""
    if version == LEGACY_VERSION:
        return f"craig:{LEGACY_VERSION}:{key_id}".encode()
    return _column_part(version, key_id, context.table, context.column) + _prefixed(context.row_id)


def _prefixed(part: str) -> bytes:
    raw = part.encode("utf-8")
    return len(raw).to_bytes(4, "big") + raw


@functools.lru_cache(maxsize=ASSOCIATED_DATA_HEADS_CACHED)
def _column_part(version: str, key_id: str, table: str, column: str) -> bytes:
    """The part that every row of one column shares, made once."""
    return b"".join(_prefixed(part) for part in ("craig", version, key_id, table, column))


def derived_key_id(key: bytes) -> str:
    return "k" + hashlib.sha256(b"craig field key id\x00" + key).hexdigest()[:10]


def _decode_key(text: str, position: int) -> bytes:
    standard = text.replace("-", "+").replace("_", "/")  # accept the URL-safe alphabet too
    try:
        key = base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise KeyLoadError(f"key #{position} is not base64") from None
    if len(key) != KEY_BYTES:
        raise KeyLoadError(
            f"key #{position} decodes to {len(key)} bytes, AES-256 needs {KEY_BYTES} "
            "(generate one with `openssl rand -base64 32`)"
        )
    return key


def parse_key_ring(setting: str) -> list[tuple[str, bytes]]:
    """``[(key id, key), ...]`` newest first; raises :class:`KeyLoadError`."""
    entries = [part.strip() for part in setting.split(",") if part.strip()]
    if not entries:
        raise KeyLoadError("CRAIG_FIELD_ENCRYPTION_KEY is not set (base64 of 32 bytes)")
    ring: list[tuple[str, bytes]] = []
    for position, entry in enumerate(entries, start=1):
        key_id, sep, encoded = entry.partition(":")
        if not sep:
            key = _decode_key(entry, position)
            key_id = derived_key_id(key)
        else:
            if not _KEY_ID.fullmatch(key_id):
                raise KeyLoadError(f"key #{position} has an invalid id {key_id!r} (1-32 of A-Z a-z 0-9 _ -)")
            key = _decode_key(encoded.strip(), position)
        if any(existing == key_id for existing, _ in ring):
            raise KeyLoadError(f"key id {key_id!r} appears twice")
        ring.append((key_id, key))
    return ring


def _strict_b64url(data: str) -> bytes:
    """Decode unpadded base64url, refusing any other spelling of the same bytes (stray
    characters, non-zero padding bits), so that every change to a stored value is detected."""
    tail = len(data) % 4
    if tail == 1 or not _B64URL.fullmatch(data):
        raise ValueError("encrypted field value is not valid base64url")
    # The last character of a short final group carries bits no byte uses: they must be zero,
    # or two spellings would decode alike.
    if tail and _B64URL_VALUES[data[-1]] & _UNUSED_BITS[tail]:
        raise ValueError("encrypted field value is not canonical base64url")
    # Two replaces: several times faster than str.translate on values of this size.
    return binascii.a2b_base64(data.replace("-", "+").replace("_", "/") + "=" * (-tail % 4))


class FieldEncryptor(FieldCipher, Rekeyer):
    """Encrypts with the newest key of the ring; decrypts with whichever key a value names.

    Only ciphertext is accepted: plaintext (written while no key was set) is the policy's
    business (:class:`craig.adapters.crypto.policy.ModeCipher`)."""

    def __init__(self, ring: list[tuple[str, bytes]]) -> None:
        if not ring:
            raise KeyLoadError("a key ring needs at least one key")
        self._current_id = ring[0][0]
        self._current = AESGCM(ring[0][1])
        self._keys = {key_id: AESGCM(key) for key_id, key in ring}
        # A key of its own for digests, derived from each field key: a digest never reveals
        # anything about the key that encrypts.
        self._index_keys = {
            key_id: hmac.new(key, b"craig blind index key", hashlib.sha256).digest() for key_id, key in ring
        }

    @classmethod
    def from_setting(cls, setting: str) -> FieldEncryptor:
        return cls(parse_key_ring(setting))

    @property
    def key_ids(self) -> list[str]:
        return list(self._keys)

    @property
    def current_key_id(self) -> str:
        return self._current_id

    @property
    def current_prefix(self) -> str:
        return f"{PREFIX}{VERSION}:{self._current_id}:"

    @property
    def blind_index_prefix(self) -> str:
        return f"{BLIND_INDEX_PREFIX}{self._current_id}:"

    def _digest(self, key_id: str, purpose: str, value: str) -> str:
        message = len(purpose).to_bytes(4, "big") + purpose.encode("utf-8") + value.encode("utf-8")
        mac = hmac.new(self._index_keys[key_id], message, hashlib.sha256).digest()
        return f"{BLIND_INDEX_PREFIX}{key_id}:" + base64.urlsafe_b64encode(mac).decode("ascii").rstrip("=")

    def blind_index(self, purpose: str, value: str) -> str:
        return self._digest(self._current_id, purpose, value)

    def blind_index_candidates(self, purpose: str, value: str) -> list[str]:
        return [self._digest(key_id, purpose, value) for key_id in self._keys]

    def _seal(self, plaintext: bytes, context: FieldContext) -> str:
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._current.encrypt(nonce, plaintext, associated_data(VERSION, self._current_id, context))
        return self.current_prefix + base64.urlsafe_b64encode(nonce + sealed).decode("ascii").rstrip("=")

    def _open(self, stored: str, context: FieldContext) -> bytes:
        parts = stored.split(":")
        if len(parts) != 4 or f"{parts[0]}:" != PREFIX:
            raise UndecryptableData(f"not an encrypted field value (expected {PREFIX}{VERSION}:<key id>:<data>)")
        _, version, key_id, data = parts
        if version not in (VERSION, LEGACY_VERSION):
            raise UndecryptableData(f"unknown encrypted-field format {version!r}")
        aead = self._keys.get(key_id)
        if aead is None:
            raise UndecryptableData(
                f"value encrypted with key id {key_id!r}, which CRAIG_FIELD_ENCRYPTION_KEY does not hold"
            )
        try:
            raw = _strict_b64url(data)
        except ValueError as error:
            raise UndecryptableData(str(error)) from None
        if len(raw) < NONCE_BYTES + 16:
            raise UndecryptableData("encrypted field value is truncated")
        try:
            return aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], associated_data(version, key_id, context))
        except InvalidTag:
            raise UndecryptableData(
                f"encrypted field value failed authentication for {context.table}.{context.column} "
                "(tampered with, copied from another row or column, or wrong key)"
            ) from None

    def encrypt(self, plaintext: str, context: FieldContext) -> str:
        return self._seal(plaintext.encode("utf-8"), context)

    def decrypt(self, stored: str, context: FieldContext) -> str:
        try:
            return self._open(stored, context).decode("utf-8")
        except UnicodeDecodeError:
            raise UndecryptableData("encrypted field value is not text") from None

    def encrypt_bytes(self, plaintext: bytes, context: FieldContext) -> bytes:
        return self._seal(plaintext, context).encode("ascii")

    def decrypt_bytes(self, stored: bytes, context: FieldContext) -> bytes:
        return self._open(self._ascii(stored), context)

    def reencrypt(self, stored: str | bytes, context: FieldContext) -> str:
        if is_encrypted(stored):
            text = stored if isinstance(stored, str) else self._ascii(stored)
            plaintext = self._open(text, context)  # verified even when it is kept
            if text.startswith(self.current_prefix):
                return text
        else:
            plaintext = stored.encode("utf-8") if isinstance(stored, str) else stored
        return self._seal(plaintext, context)

    @staticmethod
    def _ascii(stored: bytes) -> str:
        try:
            return stored.decode("ascii")
        except UnicodeDecodeError:
            raise UndecryptableData("not an encrypted field value (not ASCII)") from None
