"""The claim state machine (pure), driven by Hypothesis."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from craig.domain import idempotency as model
from craig.domain.idempotency import ClaimLost, ClaimRequest, Slot, SlotStatus, StoredResponse

pytestmark = pytest.mark.unit

TTL = timedelta(seconds=30)
KEY = "slot"


def request(fp: str) -> ClaimRequest:
    return ClaimRequest(cache_key=KEY, method="POST", path="/v1/x", user_sub=None, fingerprint=fp, slot_id=uuid.uuid4())


class ClaimMachine(RuleBasedStateMachine):
    """Random claims, finalizes, failures and clock jumps on one slot."""

    def __init__(self) -> None:
        super().__init__()
        self.now = datetime(2026, 1, 1, tzinfo=UTC)
        self.slot: Slot | None = None
        self.issued: list[int] = []
        self.succeeded: Slot | None = None

    def _apply(self, new: Slot) -> None:
        assert self.slot is None or new.claim_token >= self.slot.claim_token
        self.slot = new

    @rule(fp=st.sampled_from(["a", "b"]))
    def claim(self, fp: str) -> None:
        decision = model.decide_claim(self.slot, request(fp), self.now, TTL)
        if self.slot is not None and self.slot.fingerprint != fp:
            assert isinstance(decision, model.Mismatch)
        elif isinstance(decision, model.Claim):
            assert self.slot is None or self.slot.status is not SlotStatus.SUCCEEDED
            assert self.slot is None or not self.slot.is_live_claim(self.now)
            self._apply(decision.slot)
            self.issued.append(decision.slot.claim_token)
        elif isinstance(decision, model.Replay):
            assert self.slot is not None and self.slot.status is SlotStatus.SUCCEEDED
            assert decision.response == self.slot.response
        else:
            assert isinstance(decision, model.Wait)
            assert self.slot is not None and self.slot.is_live_claim(self.now)
            assert timedelta(0) < decision.claim_left <= TTL
            assert model.retry_after_seconds(decision.claim_left) >= 1

    @precondition(lambda self: self.issued)
    @rule(data=st.data(), status=st.sampled_from([200, 201, 404, 409]))
    def finalize_ok(self, data: st.DataObject, status: int) -> None:
        token = data.draw(st.sampled_from(self.issued))
        assert self.slot is not None
        response = StoredResponse(status, (("content-type", "application/json"),), f"{token}".encode())
        current = self.slot.status is SlotStatus.PROCESSING and token == self.slot.claim_token
        try:
            new = model.finalize_succeeded(self.slot, token, response, self.now)
        except ClaimLost:
            assert not current
        else:
            assert current
            self._apply(new)
            self.succeeded = new

    @precondition(lambda self: self.issued)
    @rule(data=st.data())
    def finalize_failed(self, data: st.DataObject) -> None:
        token = data.draw(st.sampled_from(self.issued))
        assert self.slot is not None
        current = self.slot.status is SlotStatus.PROCESSING and token == self.slot.claim_token
        try:
            new = model.finalize_failed(self.slot, token, "boom", self.now)
        except ClaimLost:
            assert not current
        else:
            assert current
            self._apply(new)

    @rule(seconds=st.floats(min_value=0, max_value=45))
    def tick(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    @invariant()
    def at_most_one_live_owner(self) -> None:
        owners = [
            token
            for token in self.issued
            if self.slot is not None and self.slot.status is SlotStatus.PROCESSING and token == self.slot.claim_token
        ]
        assert len(owners) <= 1

    @invariant()
    def succeeded_never_changes(self) -> None:
        if self.succeeded is not None:
            assert self.slot == self.succeeded

    @invariant()
    def tokens_are_unique_and_increasing(self) -> None:
        assert self.issued == sorted(set(self.issued))


TestClaimMachine = ClaimMachine.TestCase


@given(
    status=st.integers(100, 599),
    body=st.binary(max_size=64),
    limit=st.integers(0, 64),
    headers=st.lists(
        st.tuples(
            st.sampled_from(["Content-Type", "Location", "ETag", "X-Other", "Set-Cookie", "Retry-After"]),
            st.text("abc/", min_size=1, max_size=5),
        ),
        max_size=6,
    ),
)
def test_storable_response_keeps_only_replay_headers_and_bounds_the_body(
    status: int, body: bytes, limit: int, headers: list[tuple[str, str]]
) -> None:
    stored = model.storable_response(status, headers, body, limit)
    assert {name for name, _ in stored.headers} <= {"content-type", "location", "etag"}
    assert stored.body_too_large == (len(body) > limit)
    assert stored.body == (b"" if len(body) > limit else body)
    assert model.is_final(status, headers) == (
        status < 500
        and status not in model.PRECONDITION_STATUSES  # they judge If-Match, which the fingerprint does not cover
        and not any(name.lower() == "retry-after" for name, _ in headers)
    )


@given(seconds=st.floats(min_value=0.001, max_value=30))
def test_retry_after_rounds_up_and_is_at_least_one(seconds: float) -> None:
    value = model.retry_after_seconds(timedelta(seconds=seconds))
    assert max(1.0, seconds) <= value < max(1.0, seconds) + 1


def test_fresh_slot_has_token_one_and_ttl() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    decision = model.decide_claim(None, request("a"), now, TTL)
    assert isinstance(decision, model.Claim)
    assert decision.slot.claim_token == 1 and decision.slot.claim_expires_at == now + TTL
    assert decision.slot.status is SlotStatus.PROCESSING
