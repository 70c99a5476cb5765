"""Contract of RateLimiter on every adapter: GCRA admission, Retry-After, sharing, purging."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from craig.adapters.memory.rate_limit import MemoryRateLimiter
from craig.adapters.postgres.rate_limit import PostgresRateLimiter
from craig.ports.rate_limit import RateLimiter
from tests.support.backends import Backend

pytestmark = pytest.mark.contract

#: Four per 4 s: one per second, so each step below has a second of slack on a loaded machine.
WINDOW = timedelta(seconds=4)


def limiter(backend: Backend) -> RateLimiter:
    if backend.memory is not None:
        return MemoryRateLimiter(backend.memory)
    assert backend.postgres is not None
    return PostgresRateLimiter(backend.postgres)


async def test_a_burst_up_to_the_limit_then_refusals_then_one_per_interval(backend: Backend) -> None:
    rate = limiter(backend)
    decisions = [await rate.hit("intake:198.51.100.7", 4, WINDOW) for _ in range(6)]
    assert [d.allowed for d in decisions] == [True, True, True, True, False, False]
    refused = decisions[4]
    assert timedelta(0) < refused.retry_after <= timedelta(seconds=1)
    assert refused.retry_after_seconds == 1
    assert (await rate.hit("intake:203.0.113.1", 4, WINDOW)).allowed  # buckets are independent

    await backend.sleep(1.1)  # a little over one interval (window / limit = 1 s)
    assert (await rate.hit("intake:198.51.100.7", 4, WINDOW)).allowed
    assert not (await rate.hit("intake:198.51.100.7", 4, WINDOW)).allowed


async def test_concurrent_hits_admit_exactly_the_limit(backend: Backend) -> None:
    rate = limiter(backend)
    decisions = await asyncio.gather(*(rate.hit("intake:shared", 5, timedelta(minutes=1)) for _ in range(20)))
    assert sum(d.allowed for d in decisions) == 5
    slowest = max(d.retry_after for d in decisions if not d.allowed)
    # about one interval (60 s / 5); on PostgreSQL a hit that queued for the row lock is judged at
    # its transaction's start (now()), a few milliseconds earlier, so it may read a hair longer
    assert timedelta(seconds=11) < slowest <= timedelta(seconds=12.5)


async def test_two_limiters_on_one_store_share_the_count(backend: Backend) -> None:
    first, second = limiter(backend), limiter(backend)
    assert (await first.hit("intake:x", 2, timedelta(minutes=1))).allowed
    assert (await second.hit("intake:x", 2, timedelta(minutes=1))).allowed
    assert not (await first.hit("intake:x", 2, timedelta(minutes=1))).allowed


async def test_idle_buckets_are_purged(backend: Backend) -> None:
    rate = limiter(backend)
    await rate.hit("intake:old", 10, timedelta(milliseconds=100))
    await rate.hit("intake:busy", 1, timedelta(minutes=10))
    await backend.sleep(0.05)
    assert await rate.purge_idle(timedelta(0), 100) == 1
    assert await rate.purge_idle(timedelta(0), 100) == 0
    assert not (await rate.hit("intake:busy", 1, timedelta(minutes=10))).allowed
