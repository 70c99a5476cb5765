"""The JSON fingerprint reads a body as the app does: UTF-8 without a byte order mark.

A body in UTF-16 or UTF-32, or behind a UTF-8 BOM, is refused by the app (400). Read as JSON by
the fingerprint, it shared its fingerprint with its UTF-8 form, so the corrected UTF-8 retry with
the same Idempotency-Key was answered the stored 400. Such a body is fingerprinted as raw bytes.
"""

from __future__ import annotations

import codecs
import hashlib

import msgspec
import pytest

from craig.domain.fingerprint import canonical_json, fingerprint

pytestmark = pytest.mark.unit

JSON = "application/json"

#: Fingerprints of UTF-8 bodies computed before the fix: a stored key must still match its retry.
PINNED = {
    b'{"title": "Doe family", "family_name": "Doe"}': (
        "d944b06ea80e0ccbb876d3f572425e409b6e4c5e7626a397ea2cdcd9cfa7ebc3"
    ),
    '{"b": [1.0, 10E-1, "é 😀"], "a": {"z": null, "y": true}}'.encode(): (
        "7c09324ca8053f96f6e0169ea939bebfd04fd54dc99cbfb26f68193092704ef3"
    ),
    b" [1, 2.50, -0] ": "e9254a1087ffc29994ffc469e4a3fab0fb21480c2734daf4b37d39d3e83bfd88",
}


def raw(body: bytes) -> str:
    return hashlib.sha256(b"raw\x00" + body).hexdigest()


def _encodings() -> list[tuple[str, bytes]]:
    text = '{"title": "Doe family", "family_name": "Doe"}'
    return [
        ("utf-16 (with BOM)", text.encode("utf-16")),
        ("utf-16-le", text.encode("utf-16-le")),
        ("utf-16-be", text.encode("utf-16-be")),
        ("utf-32 (with BOM)", text.encode("utf-32")),
        ("utf-32-le", text.encode("utf-32-le")),
        ("utf-32-be", text.encode("utf-32-be")),
        ("utf-8 behind a BOM", codecs.BOM_UTF8 + text.encode()),
    ]


@pytest.mark.parametrize(("encoding", "body"), _encodings(), ids=[name for name, _ in _encodings()])
def test_json_the_app_cannot_read_is_raw_bytes_not_its_utf8_twin(encoding: str, body: bytes) -> None:
    utf8 = b'{"title": "Doe family", "family_name": "Doe"}'
    with pytest.raises(msgspec.DecodeError):  # what the app does with it: a 400
        msgspec.json.decode(body)
    with pytest.raises(ValueError, match="not JSON"):
        canonical_json(body)
    assert fingerprint(JSON, body) == raw(body)
    assert fingerprint(JSON, body) != fingerprint(JSON, utf8)
    assert fingerprint(JSON, utf8) == PINNED[utf8]  # the UTF-8 body keeps its JSON fingerprint


def test_utf8_bodies_keep_the_fingerprints_they_had() -> None:
    bom = codecs.BOM_UTF8 + b"[1]"
    assert fingerprint(JSON, bom) == raw(bom)  # (refused before the fix: read as [1])
    for body, digest in PINNED.items():
        assert fingerprint(JSON, body) == digest
        assert fingerprint("application/problem+json; charset=utf-8", body) == digest
    # Bodies that were raw bytes already stay raw: invalid UTF-8, UTF-8-encoded surrogates.
    for body in (b'{"k": "\xff"}', b'{"k": "\xed\xa0\x80"}', b'"\\ud800"'):
        assert fingerprint(JSON, body) == raw(body)
