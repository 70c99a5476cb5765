"""The use case keeps a winner's claim alive while its handler runs, and stops on every exit."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from datetime import timedelta

import pytest

from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.memory.idempotency import MemoryIdempotencyStore
from craig.domain.constants import FINGERPRINT_INLINE_MAX_BYTES
from craig.domain.idempotency import ClaimRequest, Slot
from craig.ports.idempotency import Claimed
from craig.usecases.idempotency import IdempotencyPolicy, IdempotentRequests, idempotent_requests
from tests.support.ciphers import TEST_CIPHER

pytestmark = pytest.mark.unit

TTL = timedelta(seconds=0.3)


class CountingStore(MemoryIdempotencyStore):
    def __init__(self) -> None:
        super().__init__(MemoryDatabase(), TEST_CIPHER)
        self.beats = 0
        self.answer: bool | None = None
        self.error: Exception | None = None

    async def extend_claim(self, cache_key: str, token: int, ttl: timedelta) -> bool:
        self.beats += 1
        if self.error is not None:
            raise self.error
        if self.answer is not None:
            return self.answer
        return await super().extend_claim(cache_key, token, ttl)


async def _claimed(store: CountingStore) -> tuple[IdempotentRequests, Slot]:
    requests = IdempotentRequests(store, IdempotencyPolicy(TTL, timedelta(0), timedelta(seconds=0.05), 1024))
    request = ClaimRequest(
        cache_key=uuid.uuid4().hex, method="POST", path="/v1/x", user_sub=None, fingerprint="fp", slot_id=uuid.uuid4()
    )
    outcome = await store.try_claim(request, TTL)
    assert isinstance(outcome, Claimed)
    return requests, outcome.slot


async def _until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(30):
        while not condition():
            await asyncio.sleep(0.01)


async def test_the_claim_is_extended_while_the_block_runs_and_no_longer_after() -> None:
    store = CountingStore()
    requests, slot = await _claimed(store)
    async with requests.keep_claim(slot):
        await _until(lambda: store.beats >= 3)
        current, _ = await store.get(slot.cache_key)
        assert current is not None and current.claim_expires_at > slot.claim_expires_at
    after = store.beats
    await asyncio.sleep(TTL.total_seconds())
    assert store.beats == after


async def test_the_heartbeat_stops_when_the_block_raises() -> None:
    store = CountingStore()
    requests, slot = await _claimed(store)
    with pytest.raises(RuntimeError):
        async with requests.keep_claim(slot):
            await _until(lambda: store.beats >= 1)
            raise RuntimeError("handler failed")
    after = store.beats
    await asyncio.sleep(TTL.total_seconds())
    assert store.beats == after


async def test_a_lost_claim_stops_the_heartbeat() -> None:
    store = CountingStore()
    store.answer = False
    requests, slot = await _claimed(store)
    async with requests.keep_claim(slot):
        await _until(lambda: store.beats >= 1)
        await asyncio.sleep(TTL.total_seconds())
        assert store.beats == 1


async def test_a_failing_beat_is_retried_and_never_breaks_the_block() -> None:
    store = CountingStore()
    store.error = RuntimeError("the database is away")
    requests, slot = await _claimed(store)
    async with requests.keep_claim(slot):
        await _until(lambda: store.beats >= 2)  # tried again at the next beat
    assert store.beats >= 2


@pytest.mark.parametrize(
    ("size", "off_loop"), [(FINGERPRINT_INLINE_MAX_BYTES, False), (FINGERPRINT_INLINE_MAX_BYTES + 1, True)]
)
async def test_a_body_above_the_inline_limit_is_fingerprinted_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch, size: int, off_loop: bool
) -> None:
    threads: list[int] = []
    real = idempotent_requests.fingerprint

    def recording(content_type: str | None, body: bytes, query: bytes = b"") -> str:
        threads.append(threading.get_ident())
        return real(content_type, body, query)

    monkeypatch.setattr(idempotent_requests, "fingerprint", recording)
    body = b'{"a": "' + b"x" * (size - 9) + b'"}'
    assert len(body) == size
    claim = await IdempotentRequests.prepare(
        user_sub=None, method="POST", path="/v1/x", key="k" * 16, content_type="application/json", body=body
    )
    assert claim.fingerprint == real("application/json", body)
    assert (threads != [threading.get_ident()]) is off_loop
    assert len(threads) == 1


async def test_a_beat_due_as_the_block_ends_does_not_run() -> None:
    """The timer fires, then the block ends before the beat's task has run: the beat must not
    extend a claim that is finalized by now (nor report it lost)."""
    store = CountingStore()
    requests, slot = await _claimed(store)
    loop = asyncio.get_running_loop()
    fired = asyncio.Event()
    real_call_later = loop.call_later

    def at_once(delay: float, callback: Callable[..., object], *args: object) -> asyncio.TimerHandle:
        handle = real_call_later(0, callback, *args)
        loop.call_soon(fired.set)  # after the callback, before the beat's task runs
        return handle

    loop.call_later = at_once  # type: ignore[method-assign]
    try:
        async with requests.keep_claim(slot):
            await fired.wait()
    finally:
        loop.call_later = real_call_later  # type: ignore[method-assign]
    await asyncio.sleep(0.05)
    assert store.beats == 0
