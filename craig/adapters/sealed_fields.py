"""The encrypted columns, shared by the memory and PostgreSQL repositories (whose rows carry the
same table and column names) and by key rotation (``encrypted_columns.py``).

Every value goes through the field cipher bound to its cell (:meth:`EncryptedColumn.context`),
so a ciphertext copied to another row or column does not decrypt there. Text that PostgreSQL
would refuse (a NUL character) is refused before it is encrypted, as it was before the column
held ciphertext: the same :class:`InvalidData` on both adapters.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec
import structlog

from craig.ports.cipher import FieldCipher
from craig.ports.errors import InvalidData, UndecryptableData
from craig.ports.key_rotation import EncryptedColumn

log = structlog.get_logger(__name__)

CONTACT_SUMMARY = EncryptedColumn("contacts", "id", "summary")
PARTNER_CLIENT_SECRET = EncryptedColumn("partners", "id", "client_secret")
# Columns that held plaintext until migration 0011: their older rows read as they are until rotated.
CASE_TITLE = EncryptedColumn("cases", "id", "title", plaintext_history=True)
CASE_FAMILY_NAME = EncryptedColumn("cases", "id", "family_name", plaintext_history=True)
CASE_CLOSE_REASON = EncryptedColumn("cases", "id", "close_reason")
ATTACHMENT_FILE_NAME = EncryptedColumn("contact_attachments", "id", "file_name", plaintext_history=True)
ATTACHMENT_TYPE = EncryptedColumn("contact_attachments", "id", "attachment_type", plaintext_history=True)
TRANSACTION_PAYLOAD = EncryptedColumn("exchange_transactions", "id", "payload", plaintext_history=True)
SEND_JOB_PAYLOAD = EncryptedColumn("exchange_send_jobs", "id", "payload", plaintext_history=True)
#: BYTEA; NULL when nothing is stored (``body_too_large``, or an empty body).
RESPONSE_BODY = EncryptedColumn("idempotency_responses", "cache_key", "body", binary=True, plaintext_history=True)


#: JSON values that hold no text: nothing to look into.
_SCALARS = frozenset({int, float, bool, type(None)})


def _refuse_nul(value: Any) -> None:
    kind = type(value)  # exact types first: the ABC checks below cost several times more
    if kind in _SCALARS:
        return
    if kind is str or isinstance(value, str):
        if "\x00" in value:
            raise InvalidData("text cannot contain the NUL character (0x00)")
    elif kind is dict or isinstance(value, Mapping):
        for key, item in value.items():
            _refuse_nul(key)
            _refuse_nul(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _refuse_nul(item)


def seal(cipher: FieldCipher, column: EncryptedColumn, row_key: object, value: str) -> str:
    """Raises :class:`InvalidData` for text PostgreSQL cannot hold."""
    _refuse_nul(value)
    return cipher.encrypt(value, column.context(row_key))


def unseal(cipher: FieldCipher, column: EncryptedColumn, row_key: object, stored: str) -> str:
    """Raises :class:`UndecryptableData`."""
    return cipher.decrypt(stored, column.context(row_key))


def seal_optional(cipher: FieldCipher, column: EncryptedColumn, row_key: object, value: str | None) -> str | None:
    return None if value is None else seal(cipher, column, row_key, value)


def unseal_optional(cipher: FieldCipher, column: EncryptedColumn, row_key: object, stored: str | None) -> str | None:
    return None if stored is None else unseal(cipher, column, row_key, stored)


#: ``json.dumps(value, separators=(",", ":"))`` without making an encoder per call (dumps makes
#: one whenever an option is given): the same JSON.
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))


def seal_json(cipher: FieldCipher, column: EncryptedColumn, row_key: object, value: Mapping[str, Any]) -> str:
    """Raises :class:`InvalidData` for a NUL character in any key or string (``jsonb`` refused it).

    The encoder writes ASCII only and escapes a NUL as ``\\u0000``, so JSON without that text has
    none; only JSON with it (a NUL, or a string holding that text itself) is looked into, the
    walk over every key and string costing more than the encoding."""
    text = _COMPACT_JSON.encode(dict(value))
    if "\\u0000" in text:
        _refuse_nul(value)
    return seal(cipher, column, row_key, text)


class UnreadableJson(Mapping[str, Any]):
    """Stands in for a JSON object that did not decrypt: any use of it raises the error, so the
    row's other columns stay readable and nothing is ever sent in its place."""

    def __init__(self, error: UndecryptableData) -> None:
        self.error = error

    def __getitem__(self, key: str) -> Any:
        raise self.error

    def __iter__(self) -> Iterator[str]:
        raise self.error

    def __len__(self) -> int:
        raise self.error

    def __repr__(self) -> str:
        return f"UnreadableJson({self.error})"


_DECODER = msgspec.json.Decoder()


def loads_json(text: str) -> Any:
    """``json.loads(text)``, about six times faster for the JSON Craig writes: msgspec reads it,
    and what msgspec refuses (``NaN``, ``Infinity``, numbers beyond a float's range, lone
    surrogates, all of which ``json.dumps`` writes; or text that is no JSON at all) goes to
    ``json.loads``, which reads it as it always did or raises as it always did."""
    try:
        return _DECODER.decode(text)
    except (msgspec.DecodeError, UnicodeEncodeError):  # the latter: a lone surrogate in ``text``
        return json.loads(text)


def unseal_json(cipher: FieldCipher, column: EncryptedColumn, row_key: object, stored: str) -> Mapping[str, Any]:
    """The JSON object, or :class:`UnreadableJson` when the value does not decrypt (legacy
    plaintext is the JSON text PostgreSQL had stored as ``jsonb``)."""
    try:
        value = loads_json(unseal(cipher, column, row_key, stored))
    except UndecryptableData as error:
        log.error("an encrypted JSON value does not decrypt", column=str(column), row=str(row_key), error=str(error))
        return UnreadableJson(error)
    if not isinstance(value, dict):
        return UnreadableJson(UndecryptableData(f"{column} of {row_key} is not a JSON object"))
    return value
