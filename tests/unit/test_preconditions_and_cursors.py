"""ETags, If-Match / If-None-Match parsing, and cursors: what a client may send, and what an
attacker may try (altered, truncated, foreign or oversized cursors; odd precondition headers)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from craig.adapters.crypto.aesgcm import FieldEncryptor
from craig.adapters.crypto.policy import ModeCipher
from craig.domain.versions import IfMatch, StaleVersion
from craig.entrypoints.http.cursors import Cursors
from craig.entrypoints.http.etags import etag, none_match, parse_if_match, require_if_match
from craig.entrypoints.http.problems import ProblemException
from tests.support.ciphers import TEST_CIPHER
from tests.support.sealed import new_key

pytestmark = pytest.mark.unit

KEY = (datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), uuid.UUID(int=7))
KINDS = (datetime, uuid.UUID)


def test_if_match_compares_strongly() -> None:
    assert parse_if_match(None) is None
    assert parse_if_match("*") == IfMatch(None)
    assert parse_if_match(f'{etag(3)}, "v4"') == IfMatch(frozenset({3, 4}))
    assert parse_if_match(f"W/{etag(3)}") == IfMatch(frozenset())  # weak: never matches
    assert parse_if_match('"someone-else"') == IfMatch(frozenset())
    with pytest.raises(StaleVersion) as stale:
        IfMatch(frozenset({3})).check("case", 4)
    assert stale.value.current_version == 4
    IfMatch(None).check("case", 99)


@pytest.mark.parametrize("header", ["v3", '"v3" "v4"', '"v3",,', "x" * 5000, ", ".join(['"v1"'] * 40)])
def test_a_malformed_precondition_is_a_400(header: str) -> None:
    with pytest.raises(ProblemException) as error:
        parse_if_match(header)
    assert error.value.status_code == 400


def test_a_missing_if_match_is_a_428_where_required() -> None:
    with pytest.raises(ProblemException) as error:
        require_if_match(None)
    assert (error.value.status_code, error.value.code) == (428, "precondition-required")


def test_if_none_match() -> None:
    assert none_match(etag(2), 2) and none_match(f"W/{etag(2)}", 2) and none_match("*", 2)
    assert not none_match(etag(1), 2) and not none_match(None, 2)


def test_a_cursor_round_trips_within_its_scope_only() -> None:
    cursors = Cursors(TEST_CIPHER)
    cursor = cursors.encode("/v1/cases?status=open", KEY)
    assert cursor.isascii() and "=" not in cursor and "/" not in cursor and "+" not in cursor
    assert cursors.decode("/v1/cases?status=open", cursor, KINDS) == KEY
    for scope in ("/v1/cases?", "/v1/cases?status=closed", "/v1/referrals?"):
        with pytest.raises(ProblemException) as error:
            cursors.decode(scope, cursor, KINDS)
        assert (error.value.status_code, error.value.code) == (400, "invalid-cursor")


def test_cursors_of_another_key_ring_are_refused_and_an_old_key_still_reads() -> None:
    old, new = new_key(), new_key()
    cursor = Cursors(ModeCipher(FieldEncryptor.from_setting(f"old:{old}"), "required")).encode("s", KEY)
    rotated = Cursors(ModeCipher(FieldEncryptor.from_setting(f"new:{new},old:{old}"), "required"))
    assert rotated.decode("s", cursor, KINDS) == KEY
    stranger = Cursors(ModeCipher(FieldEncryptor.from_setting(f"old:{new_key()}"), "required"))
    with pytest.raises(ProblemException):
        stranger.decode("s", cursor, KINDS)


@given(st.integers(min_value=0, max_value=200), st.sampled_from("AZaz09-_.~é"))
def test_any_changed_character_is_refused(position: int, replacement: str) -> None:
    cursors = Cursors(TEST_CIPHER)
    cursor = cursors.encode("s", KEY)
    index = position % len(cursor)
    altered = cursor[:index] + replacement + cursor[index + 1 :]
    if altered == cursor:
        return
    with pytest.raises(ProblemException) as error:
        cursors.decode("s", altered, KINDS)
    assert error.value.status_code == 400


@pytest.mark.parametrize("cursor", ["", ".", "abc", "abc.def", "x" * 2000, "€.€"])
def test_junk_is_refused(cursor: str) -> None:
    with pytest.raises(ProblemException):
        Cursors(TEST_CIPHER).decode("s", cursor, KINDS)


def test_a_well_signed_cursor_of_the_wrong_shape_is_refused() -> None:
    cursors = Cursors(TEST_CIPHER)
    for key in [(1, 2), ("a",), (KEY[0], KEY[1], 3)]:
        with pytest.raises(ProblemException):
            cursors.decode("s", cursors.encode("s", key), KINDS)
