"""The send-job use cases on their own, on the memory adapters with a scripted partner gateway:
``DispatchSendJob``'s every outcome branch, and the small use cases the worker's scheduler calls
(an extra slot after a 401, giving jobs back, recovering expired leases)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from typing import Any

import pytest

from craig.domain.event_catalogue import EXCHANGE_SEND_FAILED, EXCHANGE_SENT
from craig.domain.exchange import (
    AttemptDecision,
    DispatchResult,
    JobStatus,
    PartnerAnswer,
    SendJob,
)
from craig.domain.partner_rate_limit import Reservation
from craig.domain.partners import Partner
from craig.ports.exchange import Claim, Delivery, Pace, PartnerGateway, PartnerRateLimited
from craig.usecases.exchange import (
    DispatchSendJob,
    GiveBackSendJobs,
    RecoverExpiredSendJobs,
    ReserveSendSlot,
    SendPolicy,
)
from tests.support.backends import Backend, memory_backend
from tests.support.exchange_data import a_partner, add_partner, add_transaction

pytestmark = pytest.mark.unit

POLICY = SendPolicy(backoff=(timedelta(seconds=7), timedelta(seconds=40)), max_attempts=3)


class ScriptedGateway(PartnerGateway):
    """Answers each request from ``answers``, after awaiting ``pace`` as the real gateway does:
    before every request, and a 401 is followed by one refreshed retry."""

    def __init__(self, *answers: DispatchResult) -> None:
        self.answers = list(answers)
        self.deliveries: list[tuple[Partner, Delivery]] = []
        self.requests = 0

    async def send(self, partner: Partner, delivery: Delivery, pace: Pace) -> DispatchResult:
        self.deliveries.append((partner, delivery))
        result = await self._request(pace)
        if result == PartnerAnswer(401):
            result = await self._request(pace)
        return result

    async def _request(self, pace: Pace) -> DispatchResult:
        await pace()
        self.requests += 1
        return self.answers.pop(0)

    async def get_json(self, partner: Partner, path: str, params: Mapping[str, str], pace: Pace) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


class Paces:
    """The pacing callable a scheduler would pass: counts its calls; from the second one on (the
    retry after a 401) it reserves a slot of its own through ``extra``."""

    def __init__(self, extra: ReserveSendSlot | None = None, partner: Partner | None = None) -> None:
        self.calls = 0
        self.extra_waits: list[timedelta] = []
        self._extra = extra
        self._partner = partner

    async def __call__(self) -> None:
        self.calls += 1
        if self.calls > 1:
            assert self._extra is not None and self._partner is not None
            self.extra_waits.append(await self._extra(self._partner))


@pytest.fixture
async def backend() -> AsyncIterator[Backend]:
    async with memory_backend() as harness:
        yield harness


def dispatcher(backend: Backend, gateway: PartnerGateway, policy: SendPolicy = POLICY) -> DispatchSendJob:
    assert backend.clock is not None
    return DispatchSendJob(gateway, backend.clock, policy)


async def claimed(backend: Backend, rate_limit_rpm: int = 6000) -> Claim:
    """One job, claimed by a real pass: leased, its partner loaded, its slot reserved."""
    partner = await add_partner(backend, a_partner(rate_limit_rpm=rate_limit_rpm))
    await add_transaction(backend, [partner.id], payload={"case": "c-7"})
    [claim] = (await backend.send_job_queue.run_pass([], 1, POLICY.lease, POLICY.max_rate_wait)).claims
    assert claim.partner is not None and claim.slot is not None and claim.slot.granted
    return claim


async def stored(backend: Backend, job: SendJob) -> SendJob:
    uow = backend.uow()
    async with uow:
        found = await uow.send_jobs.get(job.id)
    assert found is not None
    return found


async def test_a_2xx_is_sent_with_its_event_and_nothing_is_written_until_recorded(backend: Backend) -> None:
    claim = await claimed(backend)
    gateway, pace = ScriptedGateway(PartnerAnswer(200)), Paces()
    dispatched = await dispatcher(backend, gateway)(claim, pace)
    assert dispatched.name == "sent" and dispatched.give_back_in is None
    assert dispatched.outcome is not None and dispatched.outcome.job == claim.job
    assert dispatched.outcome.decision.status is JobStatus.SENT
    event = dispatched.outcome.event
    assert event is not None and event.type == EXCHANGE_SENT.name and event.aggregate_id == str(claim.job.id)
    assert event.payload["status"] == "sent" and event.payload["last_error"] is None
    assert event.correlation_id == str(claim.job.correlation_id)
    [(partner, delivery)] = gateway.deliveries
    assert partner == claim.partner
    assert delivery == Delivery(claim.job.correlation_id, {"case": "c-7"})
    assert pace.calls == 1  # the claimed slot, and no other
    assert (await stored(backend, claim.job)).status is JobStatus.IN_FLIGHT  # the caller records it
    result = await backend.send_job_queue.run_pass([dispatched.outcome], 0, POLICY.lease, POLICY.max_rate_wait)
    assert result.recorded == {claim.job.id}
    assert (await stored(backend, claim.job)).status is JobStatus.SENT


async def test_a_retryable_answer_is_retried_on_the_policy_backoff_without_an_event(backend: Backend) -> None:
    claim = await claimed(backend)
    dispatched = await dispatcher(backend, ScriptedGateway(PartnerAnswer(503)))(claim, Paces())
    assert dispatched.name == "retry" and dispatched.outcome is not None
    decision = dispatched.outcome.decision
    assert decision.status is JobStatus.PENDING and decision.retry_in == timedelta(seconds=7)
    assert decision.error == "partner answered 503 (server error)" and dispatched.outcome.event is None


async def test_a_longer_retry_after_is_honoured(backend: Backend) -> None:
    claim = await claimed(backend)
    answer = PartnerAnswer(429, retry_after=timedelta(seconds=90))
    dispatched = await dispatcher(backend, ScriptedGateway(answer))(claim, Paces())
    assert dispatched.name == "retry" and dispatched.outcome is not None
    assert dispatched.outcome.decision.retry_in == timedelta(seconds=90)


async def test_the_last_attempt_fails_the_job_and_stages_send_failed(backend: Backend) -> None:
    claim = await claimed(backend)  # attempt 1 of 1
    policy = SendPolicy(backoff=POLICY.backoff, max_attempts=1)
    dispatched = await dispatcher(backend, ScriptedGateway(PartnerAnswer(503)), policy)(claim, Paces())
    assert dispatched.name == "failed" and dispatched.outcome is not None
    assert dispatched.outcome.decision.status is JobStatus.FAILED
    event = dispatched.outcome.event
    assert event is not None and event.type == EXCHANGE_SEND_FAILED.name
    assert event.payload["status"] == "failed" and event.payload["last_error"] == "partner answered 503 (server error)"


async def test_a_final_answer_fails_the_job_at_once(backend: Backend) -> None:
    claim = await claimed(backend)
    dispatched = await dispatcher(backend, ScriptedGateway(PartnerAnswer(422)))(claim, Paces())
    assert dispatched.name == "failed" and claim.job.attempts == 1 < POLICY.max_attempts


@pytest.mark.parametrize(
    ("unusable", "error"),
    [(None, "the partner no longer exists"), ("partner client secret cannot be decrypted: x", None)],
)
async def test_a_job_without_a_partner_fails_at_once_unsent(
    backend: Backend, unusable: str | None, error: str | None
) -> None:
    claim = await claimed(backend)
    gateway = ScriptedGateway()
    dispatched = await dispatcher(backend, gateway)(Claim(claim.job, None, unusable=unusable), Paces())
    assert dispatched.name == "failed" and dispatched.outcome is not None
    assert dispatched.outcome.decision.error == (error or unusable)
    event = dispatched.outcome.event
    assert event is not None and event.type == EXCHANGE_SEND_FAILED.name
    assert gateway.deliveries == []


async def test_a_job_without_a_granted_slot_is_given_back_until_the_slot(backend: Backend) -> None:
    claim = await claimed(backend)
    gateway, pace = ScriptedGateway(), Paces()
    denied = Claim(claim.job, claim.partner, Reservation(granted=False, wait=timedelta(seconds=12)))
    dispatched = await dispatcher(backend, gateway)(denied, pace)
    assert (dispatched.name, dispatched.give_back_in, dispatched.outcome) == ("deferred", timedelta(seconds=12), None)
    no_slot = await dispatcher(backend, gateway)(Claim(claim.job, claim.partner), pace)
    assert (no_slot.name, no_slot.give_back_in) == ("deferred", POLICY.max_rate_wait)
    assert gateway.deliveries == [] and pace.calls == 0


async def test_a_claim_held_too_long_is_given_back_due_at_once_unless_it_fails_unsent(backend: Backend) -> None:
    claim = await claimed(backend)
    gateway = ScriptedGateway()
    dispatched = await dispatcher(backend, gateway)(claim, Paces(), too_late=True)
    assert (dispatched.name, dispatched.give_back_in) == ("deferred", timedelta(0))
    orphan = await dispatcher(backend, gateway)(Claim(claim.job, None), Paces(), too_late=True)
    assert orphan.name == "failed"
    assert gateway.deliveries == []


async def test_a_401_is_retried_once_on_a_slot_of_its_own(backend: Backend) -> None:
    claim = await claimed(backend, rate_limit_rpm=60)  # slots 1 s apart
    assert claim.partner is not None
    gateway = ScriptedGateway(PartnerAnswer(401), PartnerAnswer(200))
    pace = Paces(ReserveSendSlot(backend.uow, POLICY), claim.partner)
    dispatched = await dispatcher(backend, gateway)(claim, pace)
    assert dispatched.name == "sent" and gateway.requests == 2
    assert pace.extra_waits == [timedelta(seconds=1)]  # the slot after the claim's own


async def test_a_401_whose_retry_finds_no_slot_soon_enough_is_given_back_until_then(backend: Backend) -> None:
    claim = await claimed(backend, rate_limit_rpm=60)
    assert claim.partner is not None
    gateway = ScriptedGateway(PartnerAnswer(401), PartnerAnswer(200))
    tight = SendPolicy(max_rate_wait=timedelta(milliseconds=500))
    pace = Paces(ReserveSendSlot(backend.uow, tight), claim.partner)
    dispatched = await dispatcher(backend, gateway)(claim, pace)
    assert (dispatched.name, dispatched.give_back_in) == ("deferred", timedelta(seconds=1))
    assert gateway.requests == 1 and gateway.answers == [PartnerAnswer(200)]


async def test_a_send_abandoned_at_its_deadline_is_a_timeout_retried(backend: Backend) -> None:
    claim = await claimed(backend)
    dispatched = dispatcher(backend, ScriptedGateway()).abandoned(claim)
    assert dispatched.name == "retry" and dispatched.outcome is not None
    assert (
        dispatched.outcome.decision.error
        == "timeout at the partner (the dispatch outlived its deadline inside the lease)"
    )
    assert dispatched.outcome.decision.retry_in == timedelta(seconds=7)


async def test_reserve_send_slot_takes_nothing_when_it_denies(backend: Backend) -> None:
    partner = await add_partner(backend, a_partner(rate_limit_rpm=60))
    reserve = ReserveSendSlot(backend.uow, SendPolicy(max_rate_wait=timedelta(milliseconds=500)))
    assert await reserve(partner) == timedelta(0)
    with pytest.raises(PartnerRateLimited) as denied:
        await reserve(partner)
    assert denied.value.retry_after == timedelta(seconds=1)
    assert backend.clock is not None
    backend.clock.advance(1)
    assert await reserve(partner) == timedelta(0)  # the denied call took no slot


async def test_give_back_undoes_the_attempt_of_claims_still_held(backend: Backend) -> None:
    claim = await claimed(backend)
    lost = (await claimed(backend)).job
    uow = backend.uow()
    async with uow:  # the second claim is lost: its job went back and was claimed again
        assert await uow.send_jobs.defer(lost, timedelta(0))
        await uow.commit()
    assert await GiveBackSendJobs(backend.uow)([claim.job, lost], timedelta(seconds=30)) == 1
    back = await stored(backend, claim.job)
    assert (back.status, back.attempts, back.lease_expires_at) == (JobStatus.PENDING, 0, None)
    assert backend.clock is not None and back.next_attempt_at == backend.clock.now() + timedelta(seconds=30)
    assert (await stored(backend, lost)).status is JobStatus.PENDING  # left alone


async def test_recovery_requeues_expired_leases_and_stages_send_failed_for_the_last_attempt(
    backend: Backend,
) -> None:
    assert backend.clock is not None
    first, last = await claimed(backend), await claimed(backend)
    uow = backend.uow()
    async with uow:  # ``last`` comes due again and is claimed for its second (and final) attempt
        retry = AttemptDecision(JobStatus.PENDING, retry_in=timedelta(0), error="partner answered 503")
        assert await uow.send_jobs.record([(last.job, retry)])
        await uow.commit()
    [again] = (await backend.send_job_queue.run_pass([], 1, POLICY.lease, POLICY.max_rate_wait)).claims
    assert again.job.id == last.job.id and again.job.attempts == 2
    backend.clock.advance(POLICY.lease.total_seconds() + 1)
    recovered = await RecoverExpiredSendJobs(backend.uow, backend.clock, SendPolicy(max_attempts=2))()
    by_id = {job.id: job for job in recovered}
    assert (by_id[first.job.id].status, by_id[first.job.id].attempts) == (JobStatus.PENDING, 1)
    assert (by_id[last.job.id].status, by_id[last.job.id].attempts) == (JobStatus.FAILED, 2)
    async with backend.outbox.claim_batch(100) as batch:
        failed = [r.envelope for r in batch.events if r.envelope.type == EXCHANGE_SEND_FAILED.name]
    assert [e.aggregate_id for e in failed] == [str(last.job.id)]
    assert failed[0].payload["status"] == "failed" and failed[0].payload["last_error"] == "lease expired"
