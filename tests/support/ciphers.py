"""The field cipher tests use: real AES-256-GCM with a fixed test key, so every test database
holds ciphertext exactly as production does."""

from __future__ import annotations

from craig.adapters.crypto.aesgcm import FieldEncryptor

#: base64 of 32 fixed bytes (encryption_mode=required in tests too).
FIELD_KEY = "Y3JhaWctdGVzdC1maWVsZC1lbmNyeXB0aW9uLWtleSE="
TEST_CIPHER = FieldEncryptor.from_setting(FIELD_KEY)
