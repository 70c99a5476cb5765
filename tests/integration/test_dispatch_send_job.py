"""``DispatchSendJob`` through the real httpx gateway against the fake partner on 127.0.0.1: a
token the partner revoked is answered 401, refreshed once and the POST retried on a rate-limit
slot of its own (the memory adapters hold the queue and the rate limit)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from craig.adapters.partners.http import HttpPartnerGateway
from craig.domain.exchange import JobStatus
from craig.usecases.exchange import DispatchSendJob, ReserveSendSlot, SendPolicy
from tests.support.backends import memory_backend
from tests.support.exchange_data import a_partner, add_partner, add_transaction
from tests.support.fake_partner import CLIENT_ID, CLIENT_SECRET, serving_partner

pytestmark = pytest.mark.integration

POLICY = SendPolicy(backoff=(timedelta(milliseconds=50),))


async def test_a_revoked_token_is_refreshed_once_and_the_retry_paced_on_a_slot_of_its_own() -> None:
    async with memory_backend() as backend, serving_partner() as (fake, base):
        assert backend.clock is not None
        partner = await add_partner(
            backend, a_partner(base_url=base, client_id=CLIENT_ID, client_secret=CLIENT_SECRET, rate_limit_rpm=6000)
        )
        gateway = HttpPartnerGateway(connect_timeout_seconds=2, read_timeout_seconds=10, max_connections=4)
        dispatch = DispatchSendJob(gateway, backend.clock, POLICY)
        reserve = ReserveSendSlot(backend.uow, POLICY)
        extra: list[timedelta] = []
        paced: list[int] = []

        async def claimed_then_extra() -> None:
            if paced:
                extra.append(await reserve(partner))
            paced.append(1)

        try:
            verdicts = []
            for _ in range(2):
                await add_transaction(backend, [partner.id])
                [claim] = (await backend.send_job_queue.run_pass([], 1, POLICY.lease, POLICY.max_rate_wait)).claims
                paced.clear()
                verdicts.append(await dispatch(claim, claimed_then_extra))
                fake.expire_tokens()  # the cached token is now refused
        finally:
            await gateway.aclose()
    assert [v.name for v in verdicts] == ["sent", "sent"]
    assert all(v.outcome is not None and v.outcome.decision.status is JobStatus.SENT for v in verdicts)
    assert [r.status for r in fake.received] == [201, 401, 201]
    first, _refused, retried = fake.received
    assert first.token != retried.token  # refreshed once, for the retry only
    assert fake.unauthorized == 1 and len(fake.tokens) == 2
    # Slots are 10 ms apart and the memory clock stands still: the two claims took the first two.
    assert extra == [timedelta(milliseconds=20)]
