"""Ids are standard UUIDv7 values, made without the constructor but the same in every respect."""

from __future__ import annotations

import copy
import pickle
import time
import uuid

import pytest

from craig.usecases.ids import new_id


def test_a_new_id_is_a_uuid7_equal_to_the_one_the_constructor_makes() -> None:
    for _ in range(1000):
        made = new_id()
        rebuilt = uuid.UUID(str(made))
        assert type(made) is uuid.UUID and made.version == 7 and made.variant == uuid.RFC_4122
        assert made == rebuilt and hash(made) == hash(rebuilt) and made.bytes == rebuilt.bytes
        assert made.is_safe is rebuilt.is_safe is uuid.SafeUUID.unknown
        assert pickle.loads(pickle.dumps(made)) == made and copy.deepcopy(made) == made


def test_ids_are_immutable_and_ordered_by_creation_time() -> None:
    first = new_id()
    with pytest.raises(TypeError):
        first.int = 0  # type: ignore[misc]
    time.sleep(0.002)
    later = new_id()
    assert first < later and len({new_id() for _ in range(10_000)}) == 10_000
