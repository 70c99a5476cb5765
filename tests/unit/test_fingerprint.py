"""Keys, scopes and canonical fingerprints (pure)."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from craig.domain.fingerprint import (
    InvalidIdempotencyKey,
    cache_key,
    canonical_json,
    fingerprint,
    validate_key,
)

pytestmark = pytest.mark.unit

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False, width=32),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)


@given(value=st.dictionaries(st.text(max_size=5), json_values, max_size=6), indent=st.sampled_from([None, 2]))
def test_json_fingerprint_ignores_key_order_and_whitespace(value: dict[str, object], indent: int | None) -> None:
    forward = json.dumps(value, indent=indent).encode()
    backward = json.dumps(dict(reversed(list(value.items()))), separators=(",", ":")).encode()
    assert fingerprint("application/json", forward) == fingerprint("application/json; charset=utf-8", backward)


@given(number=st.integers(-1000, 1000))
def test_numbers_are_normalised(number: int) -> None:
    variants = [f"{number}", f"{number}.0", f"{number}.000", f"{number}e0"]
    assert len({canonical_json(f'{{"n": {v}}}'.encode()) for v in variants}) == 1


def test_different_json_differs() -> None:
    assert fingerprint("application/json", b'{"a": 1}') != fingerprint("application/json", b'{"a": 2}')
    assert fingerprint("application/json", b'{"a": "1"}') != fingerprint("application/json", b'{"a": 1}')


def _multipart(boundary: str, parts: list[tuple[str, str, str, bytes]]) -> bytes:
    chunks = []
    for name, filename, ctype, content in parts:
        head = f'Content-Disposition: form-data; name="{name}"'
        if filename:
            head += f'; filename="{filename}"'
        chunks.append(f"--{boundary}\r\n{head}\r\nContent-Type: {ctype}\r\n\r\n".encode() + content + b"\r\n")
    return b"".join(chunks) + f"--{boundary}--\r\n".encode()


@given(
    content=st.binary(max_size=200),
    boundaries=st.tuples(*[st.text("abcdefXYZ0123456789", min_size=8, max_size=20)] * 2),
)
def test_multipart_fingerprint_ignores_the_boundary(content: bytes, boundaries: tuple[str, str]) -> None:
    parts = [("file", "scan.png", "image/png", content), ("attachment_type", "", "text/plain", b"report")]
    one, two = (_multipart(b, parts) for b in boundaries)
    if any(b.encode() in content for b in boundaries):
        return  # a boundary inside the content is not a valid multipart body
    assert fingerprint(f"multipart/form-data; boundary={boundaries[0]}", one) == fingerprint(
        f'multipart/form-data; boundary="{boundaries[1]}"', two
    )


def test_multipart_differs_by_filename_and_content() -> None:
    base = [("file", "a.png", "image/png", b"x")]
    ct = "multipart/form-data; boundary=BOUNDARY12"
    fp = fingerprint(ct, _multipart("BOUNDARY12", base))
    assert fp != fingerprint(ct, _multipart("BOUNDARY12", [("file", "b.png", "image/png", b"x")]))
    assert fp != fingerprint(ct, _multipart("BOUNDARY12", [("file", "a.png", "image/png", b"y")]))


def test_other_bodies_are_raw_bytes() -> None:
    assert fingerprint("text/plain", b"a b") != fingerprint("text/plain", b"a  b")
    assert fingerprint(None, b"") == fingerprint("application/octet-stream", b"")


@given(key=st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=255))
def test_printable_ascii_keys_are_valid(key: str) -> None:
    assert validate_key(key) == key


@pytest.mark.parametrize("key", ["", "x" * 256, "é", "a\tb", "a\nb", "\x7f"])
def test_other_keys_are_refused(key: str) -> None:
    with pytest.raises(InvalidIdempotencyKey):
        validate_key(key)


def test_cache_key_is_scoped_by_user_method_path_and_key() -> None:
    ann, bob = uuid.uuid4(), uuid.uuid4()
    base = cache_key(ann, "POST", "/v1/cases", "k")
    assert base != cache_key(bob, "POST", "/v1/cases", "k")
    assert base != cache_key(ann, "PATCH", "/v1/cases", "k")
    assert base != cache_key(ann, "POST", "/v1/other", "k")
    assert base != cache_key(None, "POST", "/v1/cases", "k")
    assert base == cache_key(ann, "post", "/v1/cases", "k")
