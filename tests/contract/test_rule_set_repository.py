"""Contract of RuleSetRepository on every adapter: versions, listing, the seeded default."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from craig.domain.intake import DEFAULT_TRIAGE_RULES
from craig.domain.pages import PageRequest
from tests.support.backends import Backend

pytestmark = pytest.mark.contract

T0 = datetime(2026, 2, 1, tzinfo=UTC)
AUTHOR = uuid.uuid4()


def document(decision: str, extra: int = 0) -> list[dict[str, Any]]:
    rules = [{"when": {"fact": "n", "op": "gt", "value": i}, "then": f"{decision}-{i}"} for i in range(extra)]
    return [*rules, {"when": {"all": []}, "then": decision}]


async def test_versions_are_dense_and_immutable(backend: Backend) -> None:
    uow = backend.uow()
    async with uow:
        assert await uow.rule_sets.add_version("triage", document("one"), AUTHOR, T0) == 1
        assert await uow.rule_sets.add_version("triage", document("two", 1), AUTHOR, T0 + timedelta(1)) == 2
        assert await uow.rule_sets.add_version("other", document("x"), AUTHOR, T0) == 1
        await uow.commit()
    async with uow:
        latest = await uow.rule_sets.latest("triage")
        first = await uow.rule_sets.get("triage", 1)
        assert await uow.rule_sets.get("triage", 3) is None
        assert await uow.rule_sets.latest("missing") is None
    assert latest is not None and first is not None
    assert (latest.version, latest.created_by, latest.created_at) == (2, AUTHOR, T0 + timedelta(1))
    assert list(latest.document) == document("two", 1)
    assert latest.evaluate({"n": 5}).decision == "two-0"
    assert first.evaluate({"n": 5}).decision == "one"


async def test_a_number_is_read_back_as_jsonb_keeps_it_on_every_adapter(backend: Backend) -> None:
    """JSONB keeps a number as an exact decimal written without an exponent: a value sent as a
    float in exponent form comes back as an integer. The memory adapter gives the same values
    back, so what the tests see on it is what PostgreSQL does."""
    sent = [1e23, 1.5e2, 2.5e20, 1e-07, 0.1, 3, -0.0]  # as JSON: 1e+23, 150.0, 2.5e+20, 1e-07, 0.1, 3, -0.0
    rules = [{"when": {"fact": "n", "op": "eq", "value": v}, "then": f"r{i}"} for i, v in enumerate(sent)]
    uow = backend.uow()
    async with uow:
        version = await uow.rule_sets.add_version("numbers", rules, AUTHOR, T0)
        stored = await uow.rule_sets.get("numbers", version)
        await uow.commit()
    assert stored is not None
    values = [rule["when"]["value"] for rule in stored.document]
    assert [(type(v).__name__, v) for v in values] == [
        ("int", 10**23),
        ("float", 150.0),
        ("int", 250 * 10**18),
        ("float", 1e-07),
        ("float", 0.1),
        ("int", 3),
        ("float", 0.0),
    ]
    assert str(values[-1]) == "0.0"  # no negative zero: JSONB has none


async def test_a_rolled_back_version_leaves_no_trace(backend: Backend) -> None:
    uow = backend.uow()
    async with uow:
        await uow.rule_sets.add_version("triage", document("gone"), AUTHOR, T0)
    async with uow:
        assert await uow.rule_sets.latest("triage") is None
        assert await uow.rule_sets.add_version("triage", document("kept"), AUTHOR, T0) == 1
        await uow.commit()


async def test_listing_gives_each_name_once_with_its_latest_version(backend: Backend) -> None:
    uow = backend.uow()
    async with uow:
        for name in ("b-set", "a-set", "c-set"):
            await uow.rule_sets.add_version(name, document(name), AUTHOR, T0)
        await uow.rule_sets.add_version("a-set", document("a2", 2), AUTHOR, T0)
        await uow.commit()
    async with uow:
        first = await uow.rule_sets.list_latest(PageRequest(page=1, per_page=2))
        second = await uow.rule_sets.list_latest(PageRequest(page=2, per_page=2))
    names = [s.name for s in [*first.items, *second.items]]
    assert names == ["a-set", "b-set", "c-set", "intake-triage"]
    assert first.total == second.total == 4
    a_set = first.items[0]
    assert (a_set.version, a_set.rule_count) == (2, 3)


async def test_the_default_intake_triage_is_there(backend: Backend) -> None:
    uow = backend.uow()
    async with uow:
        default = await uow.rule_sets.latest("intake-triage")
    assert default is not None and default.version == 1
    assert list(default.document) == list(DEFAULT_TRIAGE_RULES)


async def test_concurrent_writers_of_one_name_get_distinct_versions(backend: Backend) -> None:
    async def write(n: int) -> int:
        uow = backend.uow()
        async with uow:
            version = await uow.rule_sets.add_version("raced", document(f"w{n}"), AUTHOR, T0)
            await asyncio.sleep(0.01)
            await uow.commit()
        return version

    versions = await asyncio.gather(*(write(n) for n in range(5)))
    assert sorted(versions) == [1, 2, 3, 4, 5]
