"""Contract of PartnerGateway (its one adapter, httpx) against the fake partner on 127.0.0.1."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import attrs
import pytest

from craig.adapters.partners.http import HttpPartnerGateway
from craig.domain.constants import PARTNER_POOL_WAIT, TOKEN_REFRESH_LEAD_TIME
from craig.domain.exchange import PartnerAnswer, TransportFailure, Verdict, classify, recorded_error
from craig.domain.partners import Partner
from craig.ports.exchange import Delivery, UpstreamDeserializeError, UpstreamError
from tests.support.apps import free_port
from tests.support.exchange_data import a_partner
from tests.support.fake_partner import CLIENT_ID, CLIENT_SECRET, FakePartner, serving_partner

pytestmark = pytest.mark.contract


@attrs.define
class Setup:
    fake: FakePartner
    partner: Partner
    gateway: HttpPartnerGateway
    paced: int = 0

    async def pace(self) -> None:
        self.paced += 1

    async def send(self, correlation: uuid.UUID | None = None) -> PartnerAnswer | TransportFailure:
        delivery = Delivery(correlation or uuid.uuid4(), {"case": "c-1"})
        return await self.gateway.send(self.partner, delivery, self.pace)


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    async with serving_partner() as (fake, base):
        partner = a_partner(base_url=base, client_id=CLIENT_ID, client_secret=CLIENT_SECRET)
        gateway = HttpPartnerGateway(connect_timeout_seconds=2, read_timeout_seconds=0.5, max_connections=10)
        try:
            yield Setup(fake, partner, gateway)
        finally:
            await gateway.aclose()


async def test_a_post_carries_the_correlation_id_and_a_bearer_token(setup: Setup) -> None:
    correlation = uuid.uuid4()
    result = await setup.send(correlation)
    assert result == PartnerAnswer(201, None, '{"received":"' + str(correlation) + '"}')
    [received] = setup.fake.received
    assert received.correlation_id == str(correlation) and received.token in setup.fake.tokens
    assert setup.paced == 1


async def test_concurrent_sends_share_one_token(setup: Setup) -> None:
    results = await asyncio.gather(*(setup.send() for _ in range(10)))
    assert all(classify(r) is Verdict.SENT for r in results)
    assert len(setup.fake.tokens) == 1


async def test_a_401_forces_one_refresh_and_one_retry(setup: Setup) -> None:
    await setup.send()
    setup.fake.expire_tokens()
    result = await setup.send()
    assert classify(result) is Verdict.SENT
    assert len(setup.fake.tokens) == 2 and setup.fake.unauthorized == 1
    assert setup.paced == 3  # the retry waited for a rate-limit slot of its own


async def test_partner_errors_are_results_with_retry_after(setup: Setup) -> None:
    setup.fake.throttle_next, setup.fake.retry_after_seconds = 1, 42
    throttled = await setup.send()
    assert isinstance(throttled, PartnerAnswer) and throttled.status == 429
    assert throttled.retry_after == timedelta(seconds=42)
    setup.fake.fail_each, setup.fake.fail_status = 1, 400
    rejected = await setup.send()
    assert isinstance(rejected, PartnerAnswer) and rejected.status == 400
    assert classify(rejected) is Verdict.FAIL


async def test_a_slow_partner_is_a_timeout(setup: Setup) -> None:
    setup.fake.delay_seconds = 1
    result = await setup.send()
    assert isinstance(result, TransportFailure) and result.kind == "timeout"


async def test_an_unreachable_partner_is_a_connection_failure(setup: Setup) -> None:
    dead = attrs.evolve(setup.partner, base_url=f"http://127.0.0.1:{free_port()}")
    result = await setup.gateway.send(dead, Delivery(uuid.uuid4(), {}), setup.pace)
    assert isinstance(result, TransportFailure) and result.kind == "connection"


async def test_bad_credentials_fail_at_the_token_endpoint(setup: Setup) -> None:
    wrong = attrs.evolve(setup.partner, client_secret="wrong")
    result = await setup.gateway.send(wrong, Delivery(uuid.uuid4(), {}), setup.pace)
    assert isinstance(result, PartnerAnswer) and result.status == 401
    assert result.at_token_endpoint and classify(result) is Verdict.FAIL
    assert recorded_error(result) == "token endpoint answered 401 (client error)"
    assert setup.fake.received == []


async def test_get_json_returns_the_body_or_raises_upstream_errors(setup: Setup) -> None:
    setup.fake.records = [{"id": "1", "type": "case"}]
    body = await setup.gateway.get_json(setup.partner, "/records", {"page": "1", "per_page": "5"}, setup.pace)
    assert body == {"items": [{"id": "1", "type": "case"}], "page": 1, "per_page": 5, "total": 1}
    setup.fake.records_status = 503
    with pytest.raises(UpstreamError) as failed:
        await setup.gateway.get_json(setup.partner, "/records", {}, setup.pace)
    assert failed.value.path == "/records" and "503" in failed.value.detail
    assert not isinstance(failed.value, UpstreamDeserializeError)


async def test_get_json_of_a_body_that_is_not_json(setup: Setup) -> None:
    setup.fake.records_text = "<html>maintenance</html>"
    with pytest.raises(UpstreamDeserializeError) as failed:
        await setup.gateway.get_json(setup.partner, "/records", {}, setup.pace)
    assert failed.value.code == "upstream_deserialize" and failed.value.path == "/records"


async def test_a_token_that_expires_during_the_rate_limit_wait_is_not_sent(setup: Setup) -> None:
    setup.fake.token_lifetime_seconds = 1.0  # refreshed at half its life
    await setup.send()  # the token is fetched: fresh for another 0.5 s

    async def long_wait() -> None:  # the rate-limit slot is further away than the token lives
        setup.paced += 1
        await asyncio.sleep(1.2)

    result = await setup.gateway.send(setup.partner, Delivery(uuid.uuid4(), {"case": "c-1"}), long_wait)
    assert classify(result) is Verdict.SENT
    assert setup.fake.unauthorized == 0 and setup.fake.tokens_used_after_expiry() == []
    assert len(setup.fake.tokens) == 2 and setup.paced == 2  # refreshed after the wait, no 401 retry


async def test_a_token_that_comes_within_the_refresh_lead_during_the_wait_is_refreshed_first(setup: Setup) -> None:
    setup.fake.token_lifetime_seconds = 3.0  # refreshed 1.5 s before it expires
    await setup.send()
    first = setup.fake.received[0].token

    async def wait() -> None:  # ends with the token still valid, but inside its refresh lead
        await asyncio.sleep(1.7)

    await setup.gateway.send(setup.partner, Delivery(uuid.uuid4(), {"case": "c-1"}), wait)
    assert setup.fake.received[-1].token != first and setup.fake.unauthorized == 0
    assert setup.fake.tokens_used_after_expiry() == []


async def test_a_request_waiting_for_a_busy_pool_never_sends_its_token_expired() -> None:
    """The only pooled connection is held by a slow send while another send, its token checked
    fresh, waits for it. The wait is bounded by the time the token has left, so the waiting send
    ends as a (retryable) timeout instead of going out with a token that expired meanwhile."""
    async with serving_partner() as (fake, base):
        partner = a_partner(base_url=base, client_id=CLIENT_ID, client_secret=CLIENT_SECRET)
        gateway = HttpPartnerGateway(connect_timeout_seconds=2, read_timeout_seconds=30, max_connections=1)
        setup = Setup(fake, partner, gateway)
        try:
            fake.token_lifetime_seconds = 4.0  # checked fresh for 2 s, valid for 4 s
            assert classify(await setup.send()) is Verdict.SENT  # the token is fetched
            fake.delay_seconds = 8.0  # the next send holds the one connection for 8 s
            holder = asyncio.create_task(setup.send())
            while len(fake.arrivals) < 2:
                await asyncio.sleep(0.01)
            waiting = await setup.send()  # its token is fresh; the pool is not
            fake.delay_seconds = 0.0  # releases the holder
            assert classify(await holder) is Verdict.SENT
        finally:
            await gateway.aclose()
    assert isinstance(waiting, TransportFailure) and waiting.kind == "timeout", waiting
    assert classify(waiting) is Verdict.RETRY
    assert fake.tokens_used_after_expiry() == [] and fake.unauthorized == 0
    assert len(fake.received) == 2  # the waiting send never reached the partner


def test_the_pool_wait_is_well_below_the_token_refresh_lead() -> None:
    assert PARTNER_POOL_WAIT * 4 <= TOKEN_REFRESH_LEAD_TIME
