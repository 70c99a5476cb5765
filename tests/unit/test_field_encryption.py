"""AES-256-GCM field encryption: round trip, tamper detection, nonces, key ring, encryption_mode,
and the v2 format's binding of every value to its cell."""

from __future__ import annotations

import base64
import os

import attrs
import pytest
import structlog
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given
from hypothesis import strategies as st

from craig.adapters.crypto.aesgcm import (
    NONCE_BYTES,
    FieldEncryptor,
    KeyLoadError,
    _strict_b64url,
    derived_key_id,
    parse_key_ring,
)
from craig.adapters.crypto.policy import (
    EncryptionInvariantViolated,
    EncryptionUnavailable,
    ModeCipher,
    encrypt_field,
    key_problem,
    load_encryptor,
)
from craig.adapters.sealed_fields import SEND_JOB_PAYLOAD, seal_json, unseal_json
from craig.ports.cipher import FieldContext
from craig.ports.errors import InvalidData, UndecryptableData
from tests.support.ciphers import TEST_CIPHER

pytestmark = pytest.mark.unit


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


KEY = new_key()
ENCRYPTOR = FieldEncryptor.from_setting(KEY)
#: A cell of a column that has always been encrypted (plaintext there is refused when required).
CELL = FieldContext("contacts", "summary", "0190a0c4-8e5f-7a4e-9d21-0c2b7f3e5a11")


def nonce_of(stored: str) -> bytes:
    data = stored.split(":")[3]
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))[:NONCE_BYTES]


@given(st.text(max_size=300))
def test_every_value_decrypts_to_itself(plaintext: str) -> None:
    stored = ENCRYPTOR.encrypt(plaintext, CELL)
    assert stored.startswith(ENCRYPTOR.current_prefix)
    assert ENCRYPTOR.decrypt(stored, CELL) == plaintext
    if len(plaintext) >= 4:
        assert plaintext not in stored


ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:=+/ !é"


@given(st.text(max_size=80), st.data())
def test_any_tampering_raises(plaintext: str, data: st.DataObject) -> None:
    stored = ENCRYPTOR.encrypt(plaintext, CELL)
    kind = data.draw(st.sampled_from(["replace", "insert", "delete", "truncate", "append"]))
    position = data.draw(st.integers(0, len(stored) - 1))
    if kind == "replace":
        char = data.draw(st.sampled_from([c for c in ALPHABET if c != stored[position]]))
        tampered = stored[:position] + char + stored[position + 1 :]
    elif kind == "insert":
        tampered = stored[:position] + data.draw(st.sampled_from(ALPHABET)) + stored[position:]
    elif kind == "delete":
        tampered = stored[:position] + stored[position + 1 :]
    elif kind == "truncate":
        tampered = stored[:position]
    else:
        tampered = stored + data.draw(st.text(ALPHABET, min_size=1, max_size=4))
    assert tampered != stored
    with pytest.raises(ValueError):
        ENCRYPTOR.decrypt(tampered, CELL)


def test_ten_thousand_encryptions_never_repeat_a_nonce() -> None:
    nonces = {nonce_of(ENCRYPTOR.encrypt("same value", CELL)) for _ in range(10_000)}
    assert len(nonces) == 10_000


def test_a_ciphertext_moved_to_another_key_id_fails() -> None:
    ring = FieldEncryptor(parse_key_ring(f"new:{new_key()},old:{KEY}"))
    stored = ring.encrypt("secret", CELL)
    relabelled = stored.replace(":new:", ":old:")
    with pytest.raises(ValueError, match="authentication"):
        ring.decrypt(relabelled, CELL)


def test_the_ring_encrypts_with_the_newest_and_decrypts_with_any() -> None:
    old = FieldEncryptor.from_setting(f"old:{KEY}")
    written_before = old.encrypt("Jane Doe", CELL)
    ring = FieldEncryptor.from_setting(f"new:{new_key()}, old:{KEY}")
    assert ring.current_key_id == "new" and ring.key_ids == ["new", "old"]
    assert ring.decrypt(written_before, CELL) == "Jane Doe"
    rotated = ring.reencrypt(written_before, CELL)
    assert rotated.startswith("enc:v2:new:") and ring.decrypt(rotated, CELL) == "Jane Doe"
    assert ring.reencrypt(rotated, CELL) == rotated
    assert ring.decrypt(ring.reencrypt("legacy plaintext", CELL), CELL) == "legacy plaintext"
    with pytest.raises(ValueError, match="does not hold"):
        old.decrypt(rotated, CELL)


def test_a_bare_key_gets_a_stable_derived_id() -> None:
    raw = base64.b64decode(KEY)
    assert FieldEncryptor.from_setting(KEY).current_key_id == derived_key_id(raw)
    assert (
        FieldEncryptor.from_setting(f"{derived_key_id(raw)}:{KEY}").decrypt(ENCRYPTOR.encrypt("x", CELL), CELL) == "x"
    )
    urlsafe = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    assert FieldEncryptor.from_setting(urlsafe).current_key_id == derived_key_id(raw)


@pytest.mark.parametrize(
    ("setting", "words"),
    [
        ("", "not set"),
        (" , ", "not set"),
        ("not base64!", "not base64"),
        (base64.b64encode(b"short").decode(), "needs 32"),
        (f"bad id!:{KEY}", "invalid id"),
        (f"a:{KEY},a:{new_key()}", "twice"),
    ],
    # KEY is random per process: ids of its own keep the test's name the same in every worker.
    ids=["empty", "blank", "not-base64", "short", "bad-id", "twice"],
)
def test_bad_key_settings_are_explained(setting: str, words: str) -> None:
    with pytest.raises(KeyLoadError, match=words):
        parse_key_ring(setting)


# --- encryption_mode (EncryptionMode, encrypt_field, startup selection) ------------------------


def test_required_without_a_key_refuses_with_the_seed_message() -> None:
    with pytest.raises(EncryptionUnavailable) as raised:
        load_encryptor("required", "")
    assert str(raised.value).startswith("encryption_mode=required but CRAIG_FIELD_ENCRYPTION_KEY load failed: ")


def test_a_malformed_key_refuses_in_either_mode() -> None:
    assert key_problem("optional", "garbage!") is not None
    assert key_problem("required", "garbage!") is not None
    assert key_problem("optional", "") is None
    assert key_problem("required", KEY) is None


def test_startup_selection_logs_the_seed_lines() -> None:
    with structlog.testing.capture_logs() as logs:
        assert load_encryptor("optional", "") is None
        assert load_encryptor("optional", KEY) is not None
        assert load_encryptor("required", KEY) is not None
    events = [entry["event"] for entry in logs]
    assert events == [
        "field encryption disabled (mode=optional, no key set)",
        "field encryption enabled (mode=optional)",
        "field encryption enabled (mode=required)",
    ]
    assert all(entry["log_level"] == "info" for entry in logs)


def test_encrypt_field_encrypts_or_refuses_by_mode() -> None:
    assert ENCRYPTOR.decrypt(encrypt_field(ENCRYPTOR, "required", "v", CELL), CELL) == "v"
    assert ENCRYPTOR.decrypt(encrypt_field(ENCRYPTOR, "optional", "v", CELL), CELL) == "v"
    assert encrypt_field(None, "optional", "v", CELL) == "v"
    with pytest.raises(EncryptionInvariantViolated, match="startup invariant violated"):
        encrypt_field(None, "required", "v", CELL)


def test_mode_cipher_reads() -> None:
    optional_plain = ModeCipher(None, "optional")
    assert optional_plain.decrypt(optional_plain.encrypt("x", CELL), CELL) == "x"
    with pytest.raises(ValueError, match="not set"):
        optional_plain.decrypt(ENCRYPTOR.encrypt("x", CELL), CELL)
    optional_keyed = ModeCipher(ENCRYPTOR, "optional")
    assert optional_keyed.decrypt("written while no key was set", CELL) == "written while no key was set"
    required = ModeCipher(ENCRYPTOR, "required")
    assert required.decrypt(required.encrypt("x", CELL), CELL) == "x"
    with pytest.raises(ValueError, match="keys rotate"):
        required.decrypt("plaintext where ciphertext belongs", CELL)


# --- format v2: values bound to their cell (table, column, row id) ------------------------------

IDENTIFIERS = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=20)
CONTEXTS = st.builds(FieldContext, IDENTIFIERS, IDENTIFIERS, st.text(min_size=1, max_size=40))


def v1_ciphertext(key: str, key_id: str, plaintext: bytes) -> str:
    """A value as the format before v2 wrote it (associated data: version and key id only),
    made here independently of the code under test."""
    nonce = os.urandom(NONCE_BYTES)
    sealed = AESGCM(base64.b64decode(key)).encrypt(nonce, plaintext, f"craig:v1:{key_id}".encode())
    return f"enc:v1:{key_id}:" + base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")


@given(st.text(max_size=200), CONTEXTS)
def test_a_value_decrypts_in_its_own_cell(plaintext: str, cell: FieldContext) -> None:
    stored = ENCRYPTOR.encrypt(plaintext, cell)
    assert stored.startswith(f"enc:v2:{ENCRYPTOR.current_key_id}:")
    assert ENCRYPTOR.decrypt(stored, FieldContext(cell.table, cell.column, cell.row_id)) == plaintext


@given(st.binary(max_size=200), CONTEXTS)
def test_bytes_round_trip_in_the_same_format(plaintext: bytes, cell: FieldContext) -> None:
    stored = ENCRYPTOR.encrypt_bytes(plaintext, cell)
    assert stored.decode("ascii").startswith(ENCRYPTOR.current_prefix)
    assert ENCRYPTOR.decrypt_bytes(stored, cell) == plaintext


@given(st.text(max_size=80), CONTEXTS, st.data())
def test_a_value_moved_to_any_other_cell_fails(plaintext: str, cell: FieldContext, data: st.DataObject) -> None:
    stored = ENCRYPTOR.encrypt(plaintext, cell)
    part = data.draw(st.sampled_from(["table", "column", "row_id"]))
    other = data.draw(
        (IDENTIFIERS if part != "row_id" else st.text(min_size=1, max_size=40)).filter(
            lambda value: value != getattr(cell, part)
        )
    )
    elsewhere = attrs.evolve(cell, **{part: other})
    with pytest.raises(UndecryptableData, match="authentication"):
        ENCRYPTOR.decrypt(stored, elsewhere)
    with pytest.raises(UndecryptableData):
        ENCRYPTOR.decrypt_bytes(stored.encode(), elsewhere)


def test_cells_that_would_concatenate_alike_stay_apart() -> None:
    """The parts are length-prefixed: moving a character from one part to the next is another cell."""
    stored = ENCRYPTOR.encrypt("x", FieldContext("ab", "c", "1"))
    for moved in (FieldContext("a", "bc", "1"), FieldContext("ab", "c1", ""), FieldContext("ab:c", "", "1")):
        with pytest.raises(UndecryptableData):
            ENCRYPTOR.decrypt(stored, moved)


@given(st.text(max_size=80), CONTEXTS, CONTEXTS)
def test_v1_values_still_decrypt_anywhere_and_rotate_to_v2_of_their_cell(
    plaintext: str, cell: FieldContext, other: FieldContext
) -> None:
    old = v1_ciphertext(KEY, ENCRYPTOR.current_key_id, plaintext.encode())
    assert ENCRYPTOR.decrypt(old, cell) == plaintext  # v1 never knew its cell
    assert ENCRYPTOR.decrypt_bytes(old.encode(), other) == plaintext.encode()
    upgraded = ENCRYPTOR.reencrypt(old, cell)
    assert upgraded.startswith(ENCRYPTOR.current_prefix) and ENCRYPTOR.decrypt(upgraded, cell) == plaintext
    if other != cell:
        with pytest.raises(UndecryptableData):
            ENCRYPTOR.decrypt(upgraded, other)


@given(st.text(max_size=80), st.data())
def test_tampering_with_a_v1_value_fails(plaintext: str, data: st.DataObject) -> None:
    old = v1_ciphertext(KEY, ENCRYPTOR.current_key_id, plaintext.encode())
    position = data.draw(st.integers(len("enc:v1:"), len(old) - 1))
    char = data.draw(st.sampled_from([c for c in ALPHABET if c != old[position]]))
    with pytest.raises(UndecryptableData):
        ENCRYPTOR.decrypt(old[:position] + char + old[position + 1 :], CELL)


def test_a_v1_value_relabelled_as_v2_fails() -> None:
    old = v1_ciphertext(KEY, ENCRYPTOR.current_key_id, b"secret")
    with pytest.raises(UndecryptableData, match="authentication"):
        ENCRYPTOR.decrypt(old.replace("enc:v1:", "enc:v2:", 1), CELL)


def test_rotation_keeps_a_current_value_only_once_it_authenticates_in_its_cell() -> None:
    stored = ENCRYPTOR.encrypt("x", CELL)
    assert ENCRYPTOR.reencrypt(stored, CELL) == stored
    with pytest.raises(UndecryptableData):
        ENCRYPTOR.reencrypt(stored, attrs.evolve(CELL, row_id="another row"))
    legacy = ENCRYPTOR.reencrypt(b"\xff\x00 raw legacy bytes", CELL)
    assert ENCRYPTOR.decrypt_bytes(legacy.encode(), CELL) == b"\xff\x00 raw legacy bytes"


def test_plaintext_is_read_in_required_mode_only_where_the_column_held_plaintext_before() -> None:
    title = FieldContext("cases", "title", "some case")
    required = ModeCipher(ENCRYPTOR, "required", plaintext_columns=[("cases", "title")])
    assert required.decrypt("Doe family", title) == "Doe family"
    assert required.decrypt_bytes(b'{"id":1}', title) == b'{"id":1}'
    with pytest.raises(UndecryptableData, match="keys rotate"):
        required.decrypt("Doe family", CELL)
    with pytest.raises(UndecryptableData, match="keys rotate"):
        required.decrypt_bytes(b"plain", attrs.evolve(title, column="family_name"))
    assert required.decrypt(required.encrypt("Doe family", title), title) == "Doe family"
    assert required.encrypt("Doe family", title) != "Doe family"
    with pytest.raises(EncryptionInvariantViolated):
        ModeCipher(None, "required").encrypt_bytes(b"x", title)
    assert ModeCipher(None, "optional").encrypt_bytes(b"x", title) == b"x"


_B64URL_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _canonical_spelling_of_something(text: str) -> bool:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        return False
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=") == text


@given(st.text(alphabet=_B64URL_ALPHABET + "=+/ \n", min_size=1, max_size=24))
def test_a_stored_value_decodes_only_from_its_one_canonical_spelling(text: str) -> None:
    """Any other spelling of the same bytes (padding bits, padding, another alphabet) is
    refused, so no change to a stored value goes unnoticed."""
    canonical = all(ch in _B64URL_ALPHABET for ch in text) and _canonical_spelling_of_something(text)
    try:
        raw = _strict_b64url(text)
    except ValueError:
        assert not canonical
    else:
        assert canonical and base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=") == text


@given(st.binary(max_size=64))
def test_every_canonical_spelling_decodes_to_its_bytes(raw: bytes) -> None:
    text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    if text:
        assert _strict_b64url(text) == raw


def _holds_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(item) for item in value)
    return False


_NUL_PRONE_TEXT = st.text(alphabet=st.sampled_from(["\x00", "\\", "u", "0", "a", "é", '"']), max_size=8)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _NUL_PRONE_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_NUL_PRONE_TEXT, inner, max_size=3),
    max_leaves=12,
)


@given(st.dictionaries(_NUL_PRONE_TEXT, _JSON, max_size=4))
def test_sealed_json_is_refused_exactly_when_a_key_or_string_holds_a_nul(value: dict[str, object]) -> None:
    """The encoded text is looked into first: a string holding the text ``\\u0000`` itself is
    not a NUL, and a NUL anywhere (a key, a nested list) is refused all the same."""
    if _holds_nul(value):
        with pytest.raises(InvalidData):
            seal_json(TEST_CIPHER, SEND_JOB_PAYLOAD, "row", value)
    else:
        sealed = seal_json(TEST_CIPHER, SEND_JOB_PAYLOAD, "row", value)
        assert unseal_json(TEST_CIPHER, SEND_JOB_PAYLOAD, "row", sealed) == value
