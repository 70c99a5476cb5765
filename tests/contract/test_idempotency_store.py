"""Contract of IdempotencyStore + IdempotencySlots, run on every adapter (memory and PostgreSQL)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest

from craig.domain.events import EventEnvelope
from craig.domain.idempotency import ClaimLost, ClaimRequest, SlotStatus, StoredResponse
from craig.ports.idempotency import Claimed, Existing
from tests.support.backends import Backend

pytestmark = pytest.mark.contract

TTL = timedelta(seconds=30)
RESPONSE = StoredResponse(201, (("content-type", "application/json"), ("location", "/v1/x/1")), b'{"id":1}')


def request(fp: str = "fp-1", key: str | None = None, user: uuid.UUID | None = None) -> ClaimRequest:
    return ClaimRequest(
        cache_key=key or uuid.uuid4().hex,
        method="POST",
        path="/v1/things",
        user_sub=user or uuid.uuid4(),
        fingerprint=fp,
        slot_id=uuid.uuid4(),
    )


async def finalize(backend: Backend, req: ClaimRequest, token: int, response: StoredResponse = RESPONSE) -> None:
    uow = backend.uow()
    async with uow:
        await uow.idempotency.finalize_succeeded(req.cache_key, token, response)
        await uow.commit()


async def test_first_claim_wins_with_token_one(backend: Backend) -> None:
    req = request()
    outcome = await backend.idempotency.try_claim(req, TTL)
    assert isinstance(outcome, Claimed)
    assert outcome.slot.status is SlotStatus.PROCESSING
    assert outcome.slot.claim_token == 1
    assert outcome.slot.claim_expires_at - outcome.slot.started_at == TTL


async def test_second_claim_sees_live_processing_slot(backend: Backend) -> None:
    req = request()
    await backend.idempotency.try_claim(req, TTL)
    outcome = await backend.idempotency.try_claim(req, TTL)
    assert isinstance(outcome, Existing)
    assert outcome.slot.status is SlotStatus.PROCESSING
    assert outcome.slot.claim_expires_at > outcome.now


async def test_succeeded_slot_is_returned_with_its_response(backend: Backend) -> None:
    req = request()
    claimed = await backend.idempotency.try_claim(req, TTL)
    await finalize(backend, req, claimed.slot.claim_token)
    outcome = await backend.idempotency.try_claim(req, TTL)
    assert isinstance(outcome, Existing)
    assert outcome.slot.status is SlotStatus.SUCCEEDED
    assert outcome.slot.response == RESPONSE


async def test_body_bytes_survive_exactly(backend: Backend) -> None:
    req = request()
    claimed = await backend.idempotency.try_claim(req, TTL)
    weird = StoredResponse(200, (("content-type", "application/octet-stream"),), bytes(range(256)) * 3)
    await finalize(backend, req, claimed.slot.claim_token, weird)
    slot, _ = await backend.idempotency.get(req.cache_key)
    assert slot is not None and slot.response == weird


async def test_failed_slot_is_reclaimed_with_next_token(backend: Backend) -> None:
    req = request()
    first = await backend.idempotency.try_claim(req, TTL)
    assert await backend.idempotency.finalize_failed(req.cache_key, first.slot.claim_token, "boom")
    again = await backend.idempotency.try_claim(req, TTL)
    assert isinstance(again, Claimed)
    assert again.slot.claim_token == first.slot.claim_token + 1


async def test_failed_slot_is_not_reclaimed_with_another_body(backend: Backend) -> None:
    req = request()
    first = await backend.idempotency.try_claim(req, TTL)
    await backend.idempotency.finalize_failed(req.cache_key, first.slot.claim_token, "boom")
    other = ClaimRequest(
        cache_key=req.cache_key,
        method=req.method,
        path=req.path,
        user_sub=req.user_sub,
        fingerprint="fp-2",
        slot_id=uuid.uuid4(),
    )
    outcome = await backend.idempotency.try_claim(other, TTL)
    assert isinstance(outcome, Existing)
    assert outcome.slot.status is SlotStatus.FAILED


async def test_dead_claim_is_recovered_after_ttl_and_not_before(backend: Backend) -> None:
    req = request()
    short = timedelta(seconds=0.4)
    first = await backend.idempotency.try_claim(req, short)
    early = await backend.idempotency.try_claim(req, short)
    assert isinstance(early, Existing)
    await backend.sleep(0.5)
    late = await backend.idempotency.try_claim(req, TTL)
    assert isinstance(late, Claimed)
    assert late.slot.claim_token == first.slot.claim_token + 1


async def test_stale_owner_cannot_overwrite_new_owner(backend: Backend) -> None:
    req = request()
    old = await backend.idempotency.try_claim(req, timedelta(0))
    new = await backend.idempotency.try_claim(req, TTL)
    assert isinstance(new, Claimed)
    uow = backend.uow()
    with pytest.raises(ClaimLost):
        async with uow:
            await uow.idempotency.finalize_succeeded(req.cache_key, old.slot.claim_token, RESPONSE)
            await uow.commit()
    assert not await backend.idempotency.finalize_failed(req.cache_key, old.slot.claim_token, "late")
    mine = StoredResponse(200, (), b"new owner")
    await finalize(backend, req, new.slot.claim_token, mine)
    slot, _ = await backend.idempotency.get(req.cache_key)
    assert slot is not None and slot.response == mine and slot.claim_token == new.slot.claim_token


async def test_succeeded_slot_never_changes(backend: Backend) -> None:
    req = request()
    claimed = await backend.idempotency.try_claim(req, TTL)
    await finalize(backend, req, claimed.slot.claim_token)
    assert not await backend.idempotency.finalize_failed(req.cache_key, claimed.slot.claim_token, "late")
    with pytest.raises(ClaimLost):
        await finalize(backend, req, claimed.slot.claim_token, StoredResponse(500, (), b"x"))
    slot, _ = await backend.idempotency.get(req.cache_key)
    assert slot is not None and slot.status is SlotStatus.SUCCEEDED and slot.response == RESPONSE


async def test_the_owner_extends_its_live_claim(backend: Backend) -> None:
    req = request()
    short = timedelta(seconds=0.6)
    claimed = await backend.idempotency.try_claim(req, short)
    for _ in range(3):  # 1.2 s in all, twice the TTL: still the owner's, because it beats
        await backend.sleep(0.4)
        assert await backend.idempotency.extend_claim(req.cache_key, claimed.slot.claim_token, short)
        assert isinstance(await backend.idempotency.try_claim(req, TTL), Existing)
    slot, now = await backend.idempotency.get(req.cache_key)
    assert slot is not None and slot.status is SlotStatus.PROCESSING and slot.claim_expires_at > now
    assert slot.claim_token == claimed.slot.claim_token
    await backend.sleep(0.7)  # the beating stopped (the owner died): the claim runs out
    recovered = await backend.idempotency.try_claim(req, TTL)
    assert isinstance(recovered, Claimed) and recovered.slot.claim_token == claimed.slot.claim_token + 1


async def test_only_the_current_owner_of_a_processing_slot_extends_it(backend: Backend) -> None:
    req = request()
    old = await backend.idempotency.try_claim(req, timedelta(0))
    new = await backend.idempotency.try_claim(req, TTL)
    assert isinstance(new, Claimed)
    assert not await backend.idempotency.extend_claim(req.cache_key, old.slot.claim_token, timedelta(hours=1))
    slot, _ = await backend.idempotency.get(req.cache_key)
    assert slot is not None and slot.claim_expires_at == new.slot.claim_expires_at
    await finalize(backend, req, new.slot.claim_token)
    assert not await backend.idempotency.extend_claim(req.cache_key, new.slot.claim_token, TTL)
    slot, _ = await backend.idempotency.get(req.cache_key)
    assert slot is not None and slot.status is SlotStatus.SUCCEEDED
    assert not await backend.idempotency.extend_claim(uuid.uuid4().hex, 1, TTL)  # no such slot


async def test_a_slot_keeps_its_id_through_reclaims_and_a_new_slot_gets_a_new_one(backend: Backend) -> None:
    req = request()
    first = await backend.idempotency.try_claim(req, timedelta(0))
    assert first.slot.slot_id == req.slot_id
    later = ClaimRequest(
        cache_key=req.cache_key,
        method=req.method,
        path=req.path,
        user_sub=req.user_sub,
        fingerprint=req.fingerprint,
        slot_id=uuid.uuid4(),
    )
    dead_owner_recovered = await backend.idempotency.try_claim(later, TTL)
    assert isinstance(dead_owner_recovered, Claimed) and dead_owner_recovered.slot.slot_id == req.slot_id
    await backend.idempotency.finalize_failed(req.cache_key, dead_owner_recovered.slot.claim_token, "boom")
    failed_retried = await backend.idempotency.try_claim(later, TTL)
    assert isinstance(failed_retried, Claimed) and failed_retried.slot.slot_id == req.slot_id
    await finalize(backend, req, failed_retried.slot.claim_token)
    replayed = await backend.idempotency.try_claim(later, TTL)
    assert isinstance(replayed, Existing) and replayed.slot.slot_id == req.slot_id
    await backend.sleep(0.3)
    assert await backend.idempotency.purge(timedelta(seconds=0.2), 100) == 1
    reborn = await backend.idempotency.try_claim(later, TTL)
    assert isinstance(reborn, Claimed) and reborn.slot.slot_id == later.slot_id != req.slot_id


async def test_concurrent_claims_have_exactly_one_winner(backend: Backend) -> None:
    req = request()
    outcomes = await asyncio.gather(*(backend.idempotency.try_claim(req, TTL) for _ in range(25)))
    assert sum(isinstance(o, Claimed) for o in outcomes) == 1


async def test_concurrent_recovery_of_a_dead_claim_has_one_winner(backend: Backend) -> None:
    req = request()
    await backend.idempotency.try_claim(req, timedelta(0))
    outcomes = await asyncio.gather(*(backend.idempotency.try_claim(req, TTL) for _ in range(25)))
    winners = [o for o in outcomes if isinstance(o, Claimed)]
    assert len(winners) == 1 and winners[0].slot.claim_token == 2


async def test_finalize_is_atomic_with_the_units_effects(backend: Backend) -> None:
    """A rollback after finalize leaves neither the effect nor the stored response."""
    req = request()
    claimed = await backend.idempotency.try_claim(req, TTL)
    uow = backend.uow()
    envelope = _envelope()
    async with uow:  # the request's transaction, opened by the idempotency layer
        async with uow:
            await uow.outbox.stage(envelope)  # the handler's effect
            await uow.commit()
        async with uow:
            await uow.idempotency.finalize_succeeded(req.cache_key, claimed.slot.claim_token, RESPONSE)
            await uow.commit()
        # left without the final commit: e.g. the COMMIT itself failed
    slot, _ = await backend.idempotency.get(req.cache_key)
    assert slot is not None and slot.status is SlotStatus.PROCESSING
    assert (await backend.outbox.stats()).pending == 0


async def test_the_requests_transaction_makes_effect_and_response_durable_together(backend: Backend) -> None:
    req = request()
    claimed = await backend.idempotency.try_claim(req, TTL)
    uow = backend.uow()
    async with uow:
        async with uow:
            await uow.outbox.stage(_envelope())
            await uow.commit()
        if backend.kind == "postgres":  # the memory database serializes: a reader would wait for us
            assert (await backend.outbox.stats()).pending == 0
        await uow.idempotency.finalize_succeeded(req.cache_key, claimed.slot.claim_token, RESPONSE)
        await uow.commit()
    slot, _ = await backend.idempotency.get(req.cache_key)
    assert slot is not None and slot.status is SlotStatus.SUCCEEDED
    assert (await backend.outbox.stats()).pending == 1


async def test_waiters_wake_when_finalize_commits(backend: Backend) -> None:
    req = request()
    claimed = await backend.idempotency.try_claim(req, TTL)
    waiter = asyncio.create_task(backend.idempotency.wait_for_change(req.cache_key, timedelta(seconds=60)))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    await finalize(backend, req, claimed.slot.claim_token)
    # Woken by the notification, not by the 60 s timeout (the bound only stops a hung test).
    await asyncio.wait_for(waiter, 20)


async def test_purge_removes_old_finished_slots_only(backend: Backend) -> None:
    done, live = request(), request()
    claimed = await backend.idempotency.try_claim(done, TTL)
    await finalize(backend, done, claimed.slot.claim_token)
    await backend.idempotency.try_claim(live, timedelta(hours=1))
    await backend.sleep(0.3)
    assert await backend.idempotency.purge(timedelta(seconds=0.2), 100) == 1
    assert (await backend.idempotency.get(done.cache_key))[0] is None
    assert (await backend.idempotency.get(live.cache_key))[0] is not None


async def test_stats_count_by_status(backend: Backend) -> None:
    a, b = request(), request()
    claimed = await backend.idempotency.try_claim(a, TTL)
    await finalize(backend, a, claimed.slot.claim_token)
    await backend.idempotency.try_claim(b, TTL)
    stats = await backend.idempotency.stats()
    assert stats.by_status == {"succeeded": 1, "processing": 1}
    assert stats.oldest_processing_started_at is not None


def _envelope() -> EventEnvelope:
    from datetime import UTC, datetime

    return EventEnvelope(
        id=uuid.uuid4(),
        source="craig-tests",
        type="tests.happened",
        occurred_at=datetime.now(UTC),
        payload={"n": 1},
        aggregate_type="test",
        aggregate_id=str(uuid.uuid4()),
    )
