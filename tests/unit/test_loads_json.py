"""``loads_json`` reads what ``json.loads`` reads, as it reads it, and refuses what it refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from craig.adapters.sealed_fields import loads_json

pytestmark = pytest.mark.unit

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),  # NaN, infinities, surrogates
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN included, and of the same types all the way down (1 is not 1.0 nor True)."""
    return json.dumps(a) == json.dumps(b) and _types(a) == _types(b)


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value)


@given(json_values, st.booleans(), st.sampled_from([None, 2]))
def test_it_reads_what_json_dumps_wrote_as_json_loads_does(value: Any, ascii_only: bool, indent: int | None) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    assert _same(loads_json(text), json.loads(text))


@pytest.mark.parametrize(
    "text",
    [
        '{"a":NaN,"b":-Infinity,"c":1e400}',
        '{"a":"\\ud800"}',
        '{"a":"\ud800"}',
        '{"a":1,"a":2}',
        '{"a":"\\u0000"}',
        " [1, 2.5e-3, null, true] ",
    ],
)
def test_what_msgspec_refuses_is_read_by_json_loads(text: str) -> None:
    assert _same(loads_json(text), json.loads(text))


@pytest.mark.parametrize("text", ['{"a":1}x', "", "{", '{"a":' + "9" * 5000 + "}", "[" * 100_000])
def test_what_json_loads_refuses_is_refused_alike(text: str) -> None:
    with pytest.raises((ValueError, RecursionError)) as expected:
        json.loads(text)
    with pytest.raises(expected.type):
        loads_json(text)
