"""A Hypothesis state machine over the IdempotencyStore port, on every adapter.

Claims with a TTL of zero are dead on arrival (their owner "crashed"), so expiry is exercised on
the database clock without sleeping. The model is the domain's own decision table; the store
must agree with it after every step.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from craig.domain.idempotency import ClaimLost, ClaimRequest, SlotStatus, StoredResponse
from craig.ports.idempotency import Claimed, Existing
from tests.support.backends import memory_backend, postgres_backend

pytestmark = pytest.mark.contract

LIVE = timedelta(seconds=60)
DEAD = timedelta(0)


def make_machine(kind: str, url: str | None) -> type[RuleBasedStateMachine]:
    class StoreMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.loop = asyncio.new_event_loop()
            self.context = memory_backend() if kind == "memory" else postgres_backend(url or "")
            self.backend = self.run(self.context.__aenter__())
            self.key = uuid.uuid4().hex
            self.user = uuid.uuid4()
            # model: (status, token, fingerprint, live, response) of the one slot
            self.status: SlotStatus | None = None
            self.token = 0
            self.fp: str | None = None
            self.live = False
            self.response: StoredResponse | None = None
            self.issued: list[int] = []

        def run(self, coro: Any) -> Any:
            return self.loop.run_until_complete(coro)

        def teardown(self) -> None:
            self.run(self.context.__aexit__(None, None, None))
            self.loop.close()

        def request(self, fp: str) -> ClaimRequest:
            return ClaimRequest(
                cache_key=self.key,
                method="POST",
                path="/v1/x",
                user_sub=self.user,
                fingerprint=fp,
                slot_id=uuid.uuid4(),
            )

        @rule(fp=st.sampled_from(["a", "b"]), ttl=st.sampled_from([LIVE, DEAD]))
        def claim(self, fp: str, ttl: timedelta) -> None:
            outcome = self.run(self.backend.idempotency.try_claim(self.request(fp), ttl))
            reclaimable = self.status is SlotStatus.FAILED or (self.status is SlotStatus.PROCESSING and not self.live)
            if self.status is None or (reclaimable and fp == self.fp):
                assert isinstance(outcome, Claimed)
                self.token += 1
                assert outcome.slot.claim_token == self.token
                self.status, self.fp, self.live, self.response = SlotStatus.PROCESSING, fp, ttl == LIVE, None
                self.issued.append(self.token)
            else:
                assert isinstance(outcome, Existing)
                assert outcome.slot.status is self.status and outcome.slot.claim_token == self.token

        @precondition(lambda self: self.issued)
        @rule(data=st.data(), status=st.sampled_from([200, 201, 422]))
        def finalize_ok(self, data: st.DataObject, status: int) -> None:
            token = data.draw(st.sampled_from(self.issued))
            response = StoredResponse(status, (("location", f"/v1/x/{token}"),), f"body {token}".encode())
            current = self.status is SlotStatus.PROCESSING and token == self.token

            async def finalize() -> None:
                uow = self.backend.uow()
                async with uow:
                    await uow.idempotency.finalize_succeeded(self.key, token, response)
                    await uow.commit()

            try:
                self.run(finalize())
            except ClaimLost:
                assert not current
            else:
                assert current
                self.status, self.response = SlotStatus.SUCCEEDED, response

        @precondition(lambda self: self.issued)
        @rule(data=st.data())
        def finalize_failed(self, data: st.DataObject) -> None:
            token = data.draw(st.sampled_from(self.issued))
            current = self.status is SlotStatus.PROCESSING and token == self.token
            applied = self.run(self.backend.idempotency.finalize_failed(self.key, token, "boom"))
            assert applied == current
            if applied:
                self.status = SlotStatus.FAILED

        @invariant()
        def store_matches_model(self) -> None:
            slot, _ = self.run(self.backend.idempotency.get(self.key))
            if self.status is None:
                assert slot is None
                return
            assert slot is not None
            assert (slot.status, slot.claim_token, slot.fingerprint) == (self.status, self.token, self.fp)
            if self.status is SlotStatus.SUCCEEDED:
                assert slot.response == self.response  # a succeeded slot never changes

    return StoreMachine


def test_store_state_machine_memory() -> None:
    run_state_machine_as_test(make_machine("memory", None), settings=settings(max_examples=60, deadline=None))


def test_store_state_machine_postgres(pg_url: str) -> None:
    machine = make_machine("postgres", pg_url)
    run_state_machine_as_test(machine, settings=settings(max_examples=12, stateful_step_count=15, deadline=None))
