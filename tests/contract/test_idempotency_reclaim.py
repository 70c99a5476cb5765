"""The reclaim rule of an idempotency slot, on every adapter, against the domain's decide_claim.

The rule lives twice: in the PostgreSQL adapter's SQL (its owner, ``_RECLAIM``) and in
``craig.domain.idempotency.decide_claim``, which the memory adapter uses. Every case below
(a slot fresh, processing and live, processing and expired, failed, succeeded; claimed again
with the same body or another) is driven through ``try_claim`` on each adapter; the store's
answer must be the table's, and must be what ``decide_claim`` says for the slot as it stood.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import attrs
import pytest

from craig.domain.idempotency import (
    Claim,
    ClaimDecision,
    ClaimRequest,
    Mismatch,
    Replay,
    SlotStatus,
    StoredResponse,
    Wait,
    decide_claim,
)
from craig.ports.idempotency import Claimed, Existing
from tests.support.backends import Backend

pytestmark = pytest.mark.contract

TTL = timedelta(seconds=30)
DEAD_ON_ARRIVAL = timedelta(0)  # a claim whose owner "crashed" at once: expired without sleeping
RESPONSE = StoredResponse(201, (("content-type", "application/json"),), b'{"id":1}')


async def leave_slot(backend: Backend, first: ClaimRequest, state: str) -> None:
    """Put ``first``'s slot in ``state`` (``fresh``: no slot at all)."""
    store = backend.idempotency
    if state == "fresh":
        return
    claimed = await store.try_claim(first, DEAD_ON_ARRIVAL if state == "processing_expired" else TTL)
    assert isinstance(claimed, Claimed)
    token = claimed.slot.claim_token
    if state == "failed":
        assert await store.finalize_failed(first.cache_key, token, "boom")
    elif state == "succeeded":
        uow = backend.uow()
        async with uow:
            await uow.idempotency.finalize_succeeded(first.cache_key, token, RESPONSE)
            await uow.commit()


#: (state the slot is left in, same body?) -> what decide_claim decides, and the slot's status
#: and token after the second request's try_claim (token 2: reclaimed under the next token).
CASES = {
    ("fresh", True): (Claim, SlotStatus.PROCESSING, 1),
    ("processing_live", True): (Wait, SlotStatus.PROCESSING, 1),
    ("processing_live", False): (Mismatch, SlotStatus.PROCESSING, 1),
    ("processing_expired", True): (Claim, SlotStatus.PROCESSING, 2),
    ("processing_expired", False): (Mismatch, SlotStatus.PROCESSING, 1),
    ("failed", True): (Claim, SlotStatus.PROCESSING, 2),
    ("failed", False): (Mismatch, SlotStatus.FAILED, 1),
    ("succeeded", True): (Replay, SlotStatus.SUCCEEDED, 1),
    ("succeeded", False): (Mismatch, SlotStatus.SUCCEEDED, 1),
}


@pytest.mark.parametrize(("state", "same_body"), list(CASES), ids=[f"{s}-{'same' if b else 'other'}" for s, b in CASES])
async def test_reclaim_follows_the_rule_on_every_adapter(backend: Backend, state: str, same_body: bool) -> None:
    expected_decision, expected_status, expected_token = CASES[(state, same_body)]
    first = ClaimRequest(
        cache_key=uuid.uuid4().hex,
        method="POST",
        path="/v1/things",
        user_sub=uuid.uuid4(),
        fingerprint="fp-1",
        slot_id=uuid.uuid4(),
    )
    await leave_slot(backend, first, state)
    second = attrs.evolve(first, fingerprint="fp-1" if same_body else "fp-2", slot_id=uuid.uuid4())
    before, now = await backend.idempotency.get(first.cache_key)
    decision: ClaimDecision = decide_claim(before, second, now, TTL)
    assert type(decision) is expected_decision

    outcome = await backend.idempotency.try_claim(second, TTL)

    assert isinstance(outcome, Claimed) == isinstance(decision, Claim)
    assert (outcome.slot.status, outcome.slot.claim_token) == (expected_status, expected_token)
    if isinstance(outcome, Claimed):
        assert isinstance(decision, Claim)
        # A reclaim keeps the slot's id; only a slot made afresh takes the request's.
        assert outcome.slot.slot_id == decision.slot.slot_id == (second.slot_id if state == "fresh" else first.slot_id)
        assert outcome.slot.fingerprint == decision.slot.fingerprint == second.fingerprint
        assert outcome.slot.claim_expires_at > now
    else:
        assert isinstance(outcome, Existing) and before is not None
        assert outcome.slot.fingerprint == before.fingerprint == first.fingerprint
        if isinstance(decision, Replay):
            assert outcome.slot.response == decision.response == RESPONSE
