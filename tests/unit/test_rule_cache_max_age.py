"""The decision cache never serves an entry older than its maximum age, a rule set or the
absence of one, even when the invalidation event never arrives (age is measured on a monotonic
clock, so stepping the wall clock changes nothing); and it is dropped whenever the instance's
subscription (re)connects."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from craig.adapters.inprocess.bus import InProcessBus
from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.memory.inbox import MemoryInboxStore
from craig.adapters.memory.uow import MemoryUnitOfWork
from craig.domain.access import Principal, Role
from craig.domain.constants import RULE_CACHE_MAX_AGE
from craig.domain.errors import NotFound
from craig.entrypoints.settings import RulesSettings, SettingsError, load_settings
from craig.ports.messaging import DeliveryOutcome, Subscription
from craig.usecases.rules import CreateRuleSet, EvaluateRuleSet, EvictOnInvalidation, RuleSetCache
from tests.support.apps import make_container, make_settings
from tests.support.ciphers import TEST_CIPHER
from tests.support.clock import FakeClock, FakeMonotonic

pytestmark = pytest.mark.unit

SUPERVISOR = Principal(uuid.uuid4(), "Sue", Role.SUPERVISOR)
MAX_AGE = timedelta(seconds=60)


def rules(decision: str) -> list[dict[str, Any]]:
    return [{"when": {"all": []}, "then": decision}]


class World:
    """Two instances on one database; no invalidation event is ever delivered between them."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.ticks = FakeMonotonic()
        self.db = MemoryDatabase(clock=self.clock)
        self.cache_a = RuleSetCache(max_age=MAX_AGE, monotonic=self.ticks)
        self.cache_b = RuleSetCache(max_age=MAX_AGE, monotonic=self.ticks)

    def advance(self, delta: timedelta) -> None:
        """Time passes: the wall clock and the monotonic clock move together."""
        self.clock.advance(delta)
        self.ticks.advance(delta)

    async def create_on_a(self, decision: str) -> int:
        create = CreateRuleSet(MemoryUnitOfWork(self.db, TEST_CIPHER), self.cache_a, "a", self.clock)
        return (await create(SUPERVISOR, "triage", rules(decision))).version

    async def decision_on_b(self) -> str | None:
        evaluate = EvaluateRuleSet(MemoryUnitOfWork(self.db, TEST_CIPHER), self.cache_b)
        try:
            return (await evaluate("triage", {}))[1].decision
        except NotFound:
            return None


def test_the_default_maximum_age_is_a_minute() -> None:
    assert RULE_CACHE_MAX_AGE == timedelta(seconds=60)


async def test_a_cached_rule_set_is_read_again_once_older_than_the_maximum_age() -> None:
    world = World()
    await world.create_on_a("v1")
    assert await world.decision_on_b() == "v1"  # cached on b
    await world.create_on_a("v2")  # its invalidation never reaches b
    world.advance(MAX_AGE - timedelta(seconds=1))
    assert await world.decision_on_b() == "v1"  # served from the cache, as before
    world.advance(timedelta(seconds=2))
    assert await world.decision_on_b() == "v2"  # older than the maximum age: read again


async def test_a_cached_absence_is_read_again_once_older_than_the_maximum_age() -> None:
    world = World()
    assert await world.decision_on_b() is None  # no rule set "triage": b remembers that
    assert world.cache_b.lookup("triage") is not None
    await world.create_on_a("v1")  # its invalidation never reaches b
    world.advance(MAX_AGE - timedelta(seconds=1))
    assert await world.decision_on_b() is None
    world.advance(timedelta(seconds=2))
    assert await world.decision_on_b() == "v1"


async def test_a_wall_clock_stepped_back_does_not_keep_a_stale_decision() -> None:
    world = World()
    await world.create_on_a("v1")
    assert await world.decision_on_b() == "v1"
    await world.create_on_a("v2")  # its invalidation never reaches b
    world.clock.advance(-timedelta(days=1))  # NTP, or a VM restored from a snapshot
    world.ticks.advance(MAX_AGE + timedelta(seconds=1))
    assert await world.decision_on_b() == "v2"


async def test_a_wall_clock_stepped_forward_does_not_age_an_entry() -> None:
    world = World()
    await world.create_on_a("v1")
    assert await world.decision_on_b() == "v1"
    await world.create_on_a("v2")
    world.clock.advance(timedelta(days=1))
    assert await world.decision_on_b() == "v1"  # a minute has not passed


async def test_a_reconnected_subscription_drops_the_whole_cache() -> None:
    world = World()
    await world.create_on_a("v1")
    assert await world.decision_on_b() == "v1"
    await world.create_on_a("v2")  # lost while b was disconnected
    EvictOnInvalidation(world.cache_b, "b").subscribed()
    assert len(world.cache_b) == 0
    assert await world.decision_on_b() == "v2"


def test_a_load_that_began_before_a_reconnection_is_not_cached() -> None:
    cache = RuleSetCache(monotonic=FakeMonotonic())
    ticket = cache.ticket()
    EvictOnInvalidation(cache, "b").subscribed()
    assert not cache.offer_absent("triage", ticket)
    assert cache.lookup("triage") is None


async def test_the_in_process_bus_reports_a_subscription_connected_when_it_starts_consuming() -> None:
    connected: list[str] = []

    async def deliver(*_: Any) -> DeliveryOutcome:
        raise AssertionError("nothing is published")

    async def handler(*_: Any) -> None:
        return None

    bus = InProcessBus(MemoryInboxStore(MemoryDatabase()), instance_id="i")
    subscription = Subscription("c", ("x.*",), handler, broadcast=True, on_connected=lambda: connected.append("c"))
    await bus.consume([(subscription, deliver)])
    await bus.close()
    assert connected == ["c"]


def test_the_maximum_age_is_a_setting_and_must_be_positive() -> None:
    settings = load_settings({"CRAIG_PROFILE": "memory", "CRAIG_RULES__CACHE_MAX_AGE_SECONDS": "5"})
    assert settings.rules.cache_max_age_seconds == 5
    with pytest.raises(SettingsError, match="CRAIG_RULES__CACHE_MAX_AGE_SECONDS must be positive"):
        load_settings({"CRAIG_PROFILE": "memory", "CRAIG_RULES__CACHE_MAX_AGE_SECONDS": "0"})


def test_the_container_gives_the_cache_the_configured_maximum_age(tmp_path: Path) -> None:
    container = make_container(make_settings("memory", tmp_path, rules=RulesSettings(cache_max_age_seconds=5)))
    assert container.rule_cache().max_age == timedelta(seconds=5)
