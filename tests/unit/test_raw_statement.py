"""Named parameters to asyncpg's positional ones, without touching casts."""

from __future__ import annotations

import pytest

from craig.adapters.postgres.raw import RawStatement

pytestmark = pytest.mark.unit


def test_names_become_positions_in_first_use_order_and_repeat_alike() -> None:
    statement = RawStatement("SELECT :b, :a, CAST(:b AS int) WHERE x = ANY(:a_list)")
    assert statement.sql == "SELECT $1, $2, CAST($1 AS int) WHERE x = ANY($3)"
    assert statement.names == ["b", "a", "a_list"]


def test_casts_and_words_with_colons_are_left_alone() -> None:
    statement = RawStatement("SELECT count(*)::int, now()::timestamptz, :n::float8 FROM t")
    assert statement.sql == "SELECT count(*)::int, now()::timestamptz, $1::float8 FROM t"
    assert statement.names == ["n"]
