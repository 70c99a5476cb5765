"""Rule-set use cases and the decision cache on the memory adapters, cache invalidation included."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.memory.outbox import MemoryOutboxRelayStore
from craig.adapters.memory.uow import MemoryUnitOfWork
from craig.domain.access import Principal, Role
from craig.domain.errors import Forbidden, NotFound
from craig.domain.events import EventEnvelope
from craig.domain.rule_documents import InvalidRuleSet, parse_rules
from craig.domain.rules import RuleSet
from craig.usecases.rules import CreateRuleSet, EvaluateRuleSet, EvictOnInvalidation, RuleSetCache
from tests.support.ciphers import TEST_CIPHER
from tests.support.clock import FakeClock

pytestmark = pytest.mark.unit

SUPERVISOR = Principal(uuid.uuid4(), "Sue", Role.SUPERVISOR)
WORKER = Principal(uuid.uuid4(), "Wes", Role.CASEWORKER)


def rules_deciding(decision: str) -> list[dict[str, Any]]:
    return [{"when": {"fact": "age", "op": "lt", "value": 5}, "then": decision}]


def rule_set(name: str, version: int) -> RuleSet:
    document = rules_deciding(f"v{version}")
    return RuleSet(
        name=name,
        version=version,
        rules=parse_rules(document),
        document=tuple(document),
        created_by=SUPERVISOR.sub,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


class Instance:
    """One app instance on a shared memory database: its own cache and instance id."""

    def __init__(self, db: MemoryDatabase, instance_id: str) -> None:
        self.db = db
        self.instance_id = instance_id
        self.cache = RuleSetCache()
        self.evict = EvictOnInvalidation(self.cache, instance_id)

    def create(self) -> CreateRuleSet:
        return CreateRuleSet(MemoryUnitOfWork(self.db, TEST_CIPHER), self.cache, self.instance_id, FakeClock())

    def evaluate(self) -> EvaluateRuleSet:
        return EvaluateRuleSet(MemoryUnitOfWork(self.db, TEST_CIPHER), self.cache)


async def staged(db: MemoryDatabase) -> list[EventEnvelope]:
    async with MemoryOutboxRelayStore(db).claim_batch(1000) as batch:
        return [record.envelope for record in batch.events]


async def test_create_commits_stages_the_event_and_fills_its_own_cache() -> None:
    db = MemoryDatabase(FakeClock())
    a = Instance(db, "instance-a")
    created = await a.create()(SUPERVISOR, "triage", rules_deciding("v1"))
    assert created.version == 1
    assert a.cache.get("triage") == created
    (event,) = await staged(db)
    assert event.type == "rules.cache_invalidated"
    assert event.payload == {"instance_id": "instance-a", "name": "triage", "version": 1}
    assert (await a.create()(SUPERVISOR, "triage", rules_deciding("v2"))).version == 2


async def test_only_supervisors_and_admins_create_and_bad_documents_stage_nothing() -> None:
    db = MemoryDatabase(FakeClock())
    a = Instance(db, "a")
    with pytest.raises(Forbidden):
        await a.create()(WORKER, "triage", rules_deciding("x"))
    with pytest.raises(InvalidRuleSet):
        await a.create()(SUPERVISOR, "triage", [{"when": {"fact": "a", "op": "like"}, "then": "x"}])
    with pytest.raises(InvalidRuleSet):
        await a.create()(SUPERVISOR, "Bad Name", rules_deciding("x"))
    assert await staged(db) == []


async def test_another_instance_serves_its_cache_until_the_event_evicts_it() -> None:
    db = MemoryDatabase(FakeClock())
    a, b = Instance(db, "a"), Instance(db, "b")
    await a.create()(SUPERVISOR, "triage", rules_deciding("v1"))
    version, evaluation = await b.evaluate()("triage", {"age": 3})
    assert (version.version, evaluation.decision) == (1, "v1")

    await a.create()(SUPERVISOR, "triage", rules_deciding("v2"))
    events = await staged(db)
    # before the event reaches b, b still answers from its cache (that is what the event is for)
    assert (await b.evaluate()("triage", {"age": 3}))[0].version == 1
    for event in events:
        await a.evict(event, MemoryUnitOfWork(db, TEST_CIPHER))  # an instance ignores its own events
        await b.evict(event, MemoryUnitOfWork(db, TEST_CIPHER))
    assert a.cache.get("triage") is not None and a.cache.get("triage").version == 2  # type: ignore[union-attr]
    version, evaluation = await b.evaluate()("triage", {"age": 3})
    assert (version.version, evaluation.decision) == (2, "v2")
    assert (await b.evaluate()("triage", {"age": 30}))[1].decision is None


async def test_evaluating_an_unknown_rule_set_is_not_found() -> None:
    with pytest.raises(NotFound):
        await Instance(MemoryDatabase(FakeClock()), "a").evaluate()("nope", {})


async def test_the_memory_database_has_the_default_intake_triage() -> None:
    version, evaluation = await Instance(MemoryDatabase(FakeClock()), "a").evaluate()(
        "intake-triage", {"mentions_immediate_danger": True}
    )
    assert (version.version, evaluation.decision, evaluation.matched_rule) == (1, "urgent", 0)


def test_a_load_that_began_before_an_eviction_is_not_cached() -> None:
    cache = RuleSetCache()
    ticket = cache.ticket()
    cache.evict("triage")  # the event for version 2 arrives while version 1 is being read
    assert not cache.offer(rule_set("triage", 1), ticket)
    assert cache.get("triage") is None
    assert cache.offer(rule_set("triage", 2), cache.ticket())
    ticket = cache.ticket()
    cache.evict(None)
    assert cache.get("triage") is None
    assert not cache.offer(rule_set("other", 1), ticket)


def test_an_older_version_never_replaces_a_newer_one() -> None:
    cache = RuleSetCache()
    cache.insert(rule_set("triage", 3))
    assert not cache.offer(rule_set("triage", 2), cache.ticket())
    assert cache.get("triage").version == 3  # type: ignore[union-attr]


def test_the_cache_is_bounded_least_recently_used_first() -> None:
    cache = RuleSetCache(max_entries=2)
    cache.insert(rule_set("a", 1))
    cache.insert(rule_set("b", 1))
    cache.get("a")
    cache.insert(rule_set("c", 1))
    assert len(cache) == 2 and cache.get("b") is None and cache.get("a") is not None


async def test_an_event_without_a_name_evicts_everything() -> None:
    cache = RuleSetCache()
    cache.insert(rule_set("a", 1))
    handler = EvictOnInvalidation(cache, "me")
    event = EventEnvelope(
        id=uuid.uuid4(),
        source="x",
        type="rules.cache_invalidated",
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        payload={"instance_id": "someone-else"},
        aggregate_type="rule_set",
        aggregate_id="a",
    )
    await handler(event, MemoryUnitOfWork(MemoryDatabase(FakeClock()), TEST_CIPHER))
    assert len(cache) == 0
