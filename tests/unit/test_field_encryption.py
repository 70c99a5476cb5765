"""AES-256-GCM field encryption: round trip, tamper detection, nonces, key ring, encryption_mode."""

from __future__ import annotations

import base64
import os

import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st

from craig.adapters.crypto.aesgcm import NONCE_BYTES, FieldEncryptor, KeyLoadError, derived_key_id, parse_key_ring
from craig.adapters.crypto.policy import (
    EncryptionInvariantViolated,
    EncryptionUnavailable,
    ModeCipher,
    encrypt_field,
    key_problem,
    load_encryptor,
)

pytestmark = pytest.mark.unit


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


KEY = new_key()
ENCRYPTOR = FieldEncryptor.from_setting(KEY)


def nonce_of(stored: str) -> bytes:
    data = stored.split(":")[3]
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))[:NONCE_BYTES]


@given(st.text(max_size=300))
def test_every_value_decrypts_to_itself(plaintext: str) -> None:
    stored = ENCRYPTOR.encrypt(plaintext)
    assert stored.startswith(ENCRYPTOR.current_prefix)
    assert ENCRYPTOR.decrypt(stored) == plaintext
    if len(plaintext) >= 4:
        assert plaintext not in stored


ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:=+/ !é"


@given(st.text(max_size=80), st.data())
def test_any_tampering_raises(plaintext: str, data: st.DataObject) -> None:
    stored = ENCRYPTOR.encrypt(plaintext)
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
        ENCRYPTOR.decrypt(tampered)


def test_ten_thousand_encryptions_never_repeat_a_nonce() -> None:
    nonces = {nonce_of(ENCRYPTOR.encrypt("same value")) for _ in range(10_000)}
    assert len(nonces) == 10_000


def test_a_ciphertext_moved_to_another_key_id_fails() -> None:
    ring = FieldEncryptor(parse_key_ring(f"new:{new_key()},old:{KEY}"))
    stored = ring.encrypt("secret")
    relabelled = stored.replace(":new:", ":old:")
    with pytest.raises(ValueError, match="authentication"):
        ring.decrypt(relabelled)


def test_the_ring_encrypts_with_the_newest_and_decrypts_with_any() -> None:
    old = FieldEncryptor.from_setting(f"old:{KEY}")
    written_before = old.encrypt("Jane Doe")
    ring = FieldEncryptor.from_setting(f"new:{new_key()}, old:{KEY}")
    assert ring.current_key_id == "new" and ring.key_ids == ["new", "old"]
    assert ring.decrypt(written_before) == "Jane Doe"
    rotated = ring.reencrypt(written_before)
    assert rotated.startswith("enc:v1:new:") and ring.decrypt(rotated) == "Jane Doe"
    assert ring.reencrypt(rotated) == rotated
    assert ring.decrypt(ring.reencrypt("legacy plaintext")) == "legacy plaintext"
    with pytest.raises(ValueError, match="does not hold"):
        old.decrypt(rotated)


def test_a_bare_key_gets_a_stable_derived_id() -> None:
    raw = base64.b64decode(KEY)
    assert FieldEncryptor.from_setting(KEY).current_key_id == derived_key_id(raw)
    assert FieldEncryptor.from_setting(f"{derived_key_id(raw)}:{KEY}").decrypt(ENCRYPTOR.encrypt("x")) == "x"
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
)
def test_bad_key_settings_are_explained(setting: str, words: str) -> None:
    with pytest.raises(KeyLoadError, match=words):
        parse_key_ring(setting)


# --- encryption_mode (seed: EncryptionMode, encrypt_field, startup selection) ------------------


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


def test_encrypt_field_follows_the_seed() -> None:
    assert ENCRYPTOR.decrypt(encrypt_field(ENCRYPTOR, "required", "v")) == "v"
    assert ENCRYPTOR.decrypt(encrypt_field(ENCRYPTOR, "optional", "v")) == "v"
    assert encrypt_field(None, "optional", "v") == "v"
    with pytest.raises(EncryptionInvariantViolated, match="startup invariant violated"):
        encrypt_field(None, "required", "v")


def test_mode_cipher_reads() -> None:
    optional_plain = ModeCipher(None, "optional")
    assert optional_plain.decrypt(optional_plain.encrypt("x")) == "x"
    with pytest.raises(ValueError, match="not set"):
        optional_plain.decrypt(ENCRYPTOR.encrypt("x"))
    optional_keyed = ModeCipher(ENCRYPTOR, "optional")
    assert optional_keyed.decrypt("written while no key was set") == "written while no key was set"
    required = ModeCipher(ENCRYPTOR, "required")
    assert required.decrypt(required.encrypt("x")) == "x"
    with pytest.raises(ValueError, match="keys rotate"):
        required.decrypt("plaintext where ciphertext belongs")
