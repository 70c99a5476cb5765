"""Keys, scopes and canonical fingerprints (pure)."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st
from multipart import MultipartSegment, PushMultipartParser  # type: ignore[import-untyped]

from craig.domain.constants import FINGERPRINT_NUMBER_MAX_PADDING_ZEROS
from craig.domain.fingerprint import (
    InvalidIdempotencyKey,
    cache_key,
    canonical_json,
    canonical_number,
    fingerprint,
    header_params,
    multipart_parts,
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


def test_json_is_what_the_api_reads_as_json() -> None:
    """``text/plain+json`` is refused by the API (415), so it is not the JSON body its corrected
    retry sends: were it fingerprinted as JSON, that retry would replay the 415."""
    body = b'{"a": 1}'
    assert fingerprint("application/merge-patch+json", body) == fingerprint("application/json", b'{"a":1}')
    assert fingerprint("text/plain+json", body) != fingerprint("application/json", body)
    assert fingerprint("text/plain+json", body) == fingerprint("text/plain", body)


def test_the_query_string_counts_and_none_changes_nothing() -> None:
    body = b'{"title": "Doe"}'
    plain = fingerprint("application/json", body)
    assert fingerprint("application/json", body, b"") == plain
    assert fingerprint("application/json", body, b"bogus=1") != plain
    assert fingerprint("application/json", body, b"bogus=1") != fingerprint("application/json", body, b"bogus=2")


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


# --- numbers: canonical as text, linear whatever the exponent ------------------------------------


@st.composite
def number_texts(
    draw: st.DrawFn, digits: int = 30, exponents: st.SearchStrategy[int] | None = None, long: bool = False
) -> str:
    """JSON numbers in every spelling: signs, leading zeros in the exponent, ``E+``, fractions;
    with ``long``, also mantissas of thousands of digits."""
    run = st.text("0123456789", min_size=1, max_size=digits)
    if long:
        run |= st.builds(lambda digit, count: digit * count, st.sampled_from("0123456789"), st.integers(1000, 20_000))
    text = draw(st.sampled_from(["", "-"])) + (draw(run).lstrip("0") or "0")
    fraction = draw(st.none() | run)
    if fraction is not None:
        text += f".{fraction}"
    exponent = draw(st.none() | (exponents if exponents is not None else st.integers(-400, 400)))
    if exponent is not None:
        sign = "-" if exponent < 0 else draw(st.sampled_from(["", "+"]))
        zeros = "0" * draw(st.integers(0, 3))
        text += f"{draw(st.sampled_from('eE'))}{sign}{zeros}{abs(exponent)}"
    return text


HOSTILE_EXPONENTS = st.sampled_from([2_000_000, -2_000_000, 200_000, -200_000, 10**17, -(10**17)]) | st.integers(
    -400, 400
)


def _decimal_canonical(text: str) -> str:
    """What the Decimal-based canonical form made of a number (the reference for ordinary ones)."""
    number = Decimal(text)
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(), "f")


@given(
    one=number_texts(digits=3, exponents=st.integers(-4, 4)), two=number_texts(digits=3, exponents=st.integers(-4, 4))
)
def test_numbers_are_one_iff_their_values_are_equal(one: str, two: str) -> None:
    assert (canonical_number(one) == canonical_number(two)) == (Decimal(one) == Decimal(two))
    same = fingerprint("application/json", f'{{"n":{one}}}'.encode()) == fingerprint(
        "application/json", f'{{"n": {two}}}'.encode()
    )
    assert same == (Decimal(one) == Decimal(two))


@given(text=number_texts(exponents=HOSTILE_EXPONENTS, long=True))
def test_the_canonical_number_has_the_same_value_and_is_barely_longer(text: str) -> None:
    canonical = canonical_number(text)
    assert Decimal(canonical) == Decimal(text)
    assert len(canonical) <= len(text) + FINGERPRINT_NUMBER_MAX_PADDING_ZEROS + 2
    body = f'{{"n":{text}}}'.encode()
    assert len(canonical_json(body)) <= len(body) + FINGERPRINT_NUMBER_MAX_PADDING_ZEROS + 2
    assert canonical_number(canonical) == canonical  # a fixed point


@given(text=number_texts(digits=14, exponents=st.integers(-8, 8)))
def test_ordinary_numbers_keep_their_canonical_form(text: str) -> None:
    """Fingerprints stored before the text-based canonical form still match. (Decimal rounded
    non-integers to 28 significant digits, so that longer ones collided; they no longer do.)"""
    assert canonical_number(text) == _decimal_canonical(text)


@pytest.mark.parametrize(
    ("spellings", "canonical"),
    [
        (["1", "1.0", "1e0", "10E-1", "0.1e1", "1E+0", "1e000"], "1"),
        (["1.50", "15e-1", "0.15E1"], "1.5"),
        (["-0", "0", "-0.0", "0.000", "0e5", "-0E-7"], "0"),
        (["1E+5", "100000", "1e05", "10000.0e1"], "100000"),
        (["1e21", "1000000000000000000000"], "1000000000000000000000"),
        (["1e22", "10000000000000000000000", "0.1e23"], "1e22"),
        (["1e-21", "0.000000000000000000001"], "0.000000000000000000001"),
        (["1e-22", "0.0000000000000000000001"], "1e-22"),
        (["1e2000000", "1E+2000000", "10e1999999", "0.001e2000003"], "1e2000000"),
        (["-1e-2000000", "-0.1e-1999999"], "-1e-2000000"),
        (["-1.25e-30", "-125e-32"], "-1.25e-30"),
    ],
)
def test_hostile_and_ordinary_spellings(spellings: list[str], canonical: str) -> None:
    assert {canonical_number(text) for text in spellings} == {canonical}
    assert len({fingerprint("application/json", f"[{text}]".encode()) for text in spellings}) == 1


def test_huge_numbers_are_fingerprinted_at_all() -> None:
    """Each of these took from a second to minutes (quadratic in the exponent or the digits)."""
    huge = fingerprint("application/json", b'{"a":1e2000000}')
    assert huge == fingerprint("application/json", b'{"a":10E+1999999}')
    assert huge != fingerprint("application/json", b'{"a":1e-2000000}')
    long = b"12345678901" * 100_000
    assert fingerprint("application/json", b"[" + long + b"]") != fingerprint("application/json", b"[" + long + b"1]")
    assert canonical_json(b"[0." + b"0" * 1_000_000 + b"1]") == b"[1e-1000001]"


@pytest.mark.parametrize(
    "body",
    [b"[1e" + b"9" * 19 + b"]", b"[" * 300 + b"]" * 300, b"[" * 5000 + b"]" * 5000, b'{"a": NaN'],
)
def test_json_the_canonical_form_refuses_is_fingerprinted_as_raw_bytes(body: bytes) -> None:
    with pytest.raises(ValueError):
        canonical_json(body)
    assert fingerprint("application/json", body) == fingerprint("application/octet-stream", body)


# --- multipart part headers: a tokenizer, not split(";") -----------------------------------------

file_names = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00") | st.sampled_from(";\"\\ =*%'"),
    min_size=1,
    max_size=24,
)


def _disposition(filename: str, style: str) -> str:
    """``filename`` as a sender writes it: a quoted string with backslash escapes, or RFC 8187."""
    if style == "quoted":
        escaped = filename.replace("\\", "\\\\").replace('"', '\\"')
        return f'form-data; name="file"; filename="{escaped}"'
    return f"form-data; name=\"file\"; filename*=UTF-8''{quote(filename, safe='')}"


def _upload(boundary: str, filename: str, style: str, content: bytes = b"%PDF-1.7") -> bytes:
    head = f"Content-Disposition: {_disposition(filename, style)}\r\nContent-Type: application/pdf"
    return f"--{boundary}\r\n{head}\r\n\r\n".encode() + content + f"\r\n--{boundary}--\r\n".encode()


STYLES = st.sampled_from(["quoted", "ext"])


@given(one=file_names, two=file_names, style=STYLES)
def test_the_fingerprint_tells_any_two_file_names_apart(one: str, two: str, style: str) -> None:
    content_type = "multipart/form-data; boundary=BOUNDARY-0123"
    first = fingerprint(content_type, _upload("BOUNDARY-0123", one, style))
    second = fingerprint(content_type, _upload("BOUNDARY-0123", two, style))
    assert (first == second) == (one == two)
    parts = multipart_parts(content_type, _upload("BOUNDARY-0123", one, style))
    assert [(p[0], p[1] if style == "quoted" else dict(p[4])["content-disposition;filename*"]) for p in parts] == [
        ("file", one)
    ]


@given(
    filename=file_names,
    style=STYLES,
    boundaries=st.tuples(*[st.text("abcdefXYZ0123456789'()+_,-./:=?", min_size=8, max_size=40)] * 2),
)
def test_the_multipart_fingerprint_is_boundary_independent(
    filename: str, style: str, boundaries: tuple[str, str]
) -> None:
    one, two = (_upload(b, filename, style) for b in boundaries)
    if any(b.encode() in _upload("", filename, style) for b in boundaries):
        return  # a boundary inside the part is not a valid multipart body
    assert fingerprint(f'multipart/form-data; boundary="{boundaries[0]}"', one) == fingerprint(
        f'multipart/form-data; boundary="{boundaries[1]}"', two
    )


def test_a_semicolon_inside_a_quoted_file_name_is_part_of_the_name() -> None:
    content_type = "multipart/form-data; boundary=BOUNDARY12"
    v1, v2 = (fingerprint(content_type, _upload("BOUNDARY12", f"report;v{n}.pdf", "quoted")) for n in (1, 2))
    assert v1 != v2
    assert multipart_parts(content_type, _upload("BOUNDARY12", "report;v1.pdf", "quoted"))[0][1] == "report;v1.pdf"


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ('form-data; name="file"; filename="report;v1.pdf"', [("name", "file"), ("filename", "report;v1.pdf")]),
        ('form-data; name=file; filename="a\\"b\\\\c.pdf"', [("name", "file"), ("filename", 'a"b\\c.pdf')]),
        ("form-data; filename*=UTF-8''r%C3%A9port%3Bv2.pdf", [("filename*", "réport;v2.pdf")]),
        ("form-data; filename*=iso-8859-1'en'%E9t%E9.txt", [("filename*", "été.txt")]),
        ('form-data ;  Name = "x" ; b= y z ;;', [("name", "x"), ("b", "y z")]),
        ('multipart/form-data; boundary="abc;def"', [("boundary", "abc;def")]),
        ("form-data", []),
    ],
)
def test_header_parameters(value: str, parsed: list[tuple[str, str]]) -> None:
    assert header_params(value)[1] == parsed


@pytest.mark.parametrize(
    "value",
    [
        'form-data; name="x" junk',
        'form-data; name="unterminated',
        "form-data; =x",
        'form-data; name=a"b',
        "form-data; filename*=no-quotes",
        "form-data; filename*=punycode''abc",  # only UTF-8 and ISO-8859-1
        'form-data; name="' + "\\x" * 50_000,  # long and hostile: refused in one pass
    ],
)
def test_malformed_header_parameters_are_refused(value: str) -> None:
    with pytest.raises(ValueError):
        header_params(value)


def test_a_multipart_body_the_tokenizer_refuses_is_fingerprinted_as_raw_bytes() -> None:
    content_type = "multipart/form-data; boundary=BOUNDARY12"
    unterminated = (
        b'--BOUNDARY12\r\nContent-Disposition: form-data; name="file"; filename="a\r\n\r\nx\r\n--BOUNDARY12--\r\n'
    )
    huge_headers = _upload("BOUNDARY12", "a" * 70_000, "quoted")  # more part headers than any form needs
    for body in (unterminated, huge_headers):
        assert fingerprint(content_type, body) == fingerprint("application/octet-stream", body)


def _parsed(boundary: bytes, body: bytes) -> list[Any]:
    """What the form parser (the one Litestar and Craig's form reader use) finds in ``body``."""
    parser = PushMultipartParser(boundary)
    found: list[Any] = []
    for part in [*parser.parse(body), *parser.parse(b"")]:
        if isinstance(part, MultipartSegment):
            found.append((part.name, part.filename))
        elif part:
            found.append(bytes(part))
    return found


def test_bodies_the_form_parser_reads_differently_never_share_a_fingerprint() -> None:
    """Split on the bare boundary anywhere, a body lacking the CRLF before its second boundary
    fingerprinted as the proper one, while the parser read a 136-byte file and no type where
    the proper body holds a 40-byte file and the type ``photo``: under one Idempotency-Key the
    second upload was answered the first one's 201 and never stored."""
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
    file_part = b'Content-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n'
    type_part = b'Content-Disposition: form-data; name="attachment_type"\r\n\r\nphoto'
    proper = b"--XyZ\r\n" + file_part + png + b"\r\n--XyZ\r\n" + type_part + b"\r\n--XyZ--\r\n"
    sloppy = b"--XyZ\r\n" + file_part + png + b"--XyZ\r\n" + type_part + b"\r\n--XyZ--\r\n"
    assert _parsed(b"XyZ", proper) != _parsed(b"XyZ", sloppy)
    content_type = "multipart/form-data; boundary=XyZ"
    assert fingerprint(content_type, proper) != fingerprint(content_type, sloppy)
    # What the parser reads alike still fingerprints alike: a preamble, an epilogue.
    for same in (b"a preamble\r\n" + proper, proper + b"an epilogue"):
        assert _parsed(b"XyZ", same) == _parsed(b"XyZ", proper)
        assert fingerprint(content_type, same) == fingerprint(content_type, proper)
