"""A Hypothesis state machine over the send-job transitions (pure domain).

Any interleaving of claims, partner answers, lease expiries, deferrals and operator retries must
keep the job's invariants: ``sent`` is final, attempts never exceed ``MAX_ATTEMPTS``, the lease
exists exactly while ``in_flight``, the fencing token only grows, the correlation id never changes.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from craig.domain import exchange as model
from craig.domain.constants import SEND_LEASE, SEND_MAX_ATTEMPTS
from craig.domain.event_catalogue import EXCHANGE_SENT, EventType
from craig.domain.exchange import InvalidJobTransition, JobStatus, PartnerAnswer, SendJob, TransportFailure

pytestmark = pytest.mark.unit

answers = st.builds(PartnerAnswer, st.sampled_from([200, 201, 204, 400, 404, 408, 409, 425, 429, 500, 503]))
failures = st.builds(TransportFailure, st.sampled_from(["timeout", "connection"]))


class SendJobMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = datetime(2026, 1, 1, tzinfo=UTC)
        self.job = SendJob(
            id=uuid.uuid4(),
            transaction_id=uuid.uuid4(),
            partner_id=uuid.uuid4(),
            correlation_id=uuid.uuid4(),
            payload={"k": 1},
            next_attempt_at=self.now,
            created_at=self.now,
        )
        self.correlation = self.job.correlation_id
        self.tokens: list[int] = [0]
        self.was_sent = False
        self.events: list[EventType | None] = []

    @rule(seconds=st.integers(min_value=0, max_value=4000))
    def time_passes(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @rule()
    def claim(self) -> None:
        if self.job.status is not JobStatus.PENDING:
            with pytest.raises(InvalidJobTransition):
                model.claimed(self.job, self.now, SEND_LEASE)
            return
        if self.job.next_attempt_at > self.now:
            return  # not due: the repositories would not claim it
        self.job = model.claimed(self.job, self.now, SEND_LEASE)
        self.tokens.append(self.job.lease_token)

    @precondition(lambda self: self.job.status is JobStatus.IN_FLIGHT)
    @rule(result=answers | failures)
    def partner_answers(self, result: PartnerAnswer | TransportFailure) -> None:
        decision = model.decide_after_attempt(self.job.attempts, result)
        self.job = model.decided(self.job, decision, self.now)
        if decision.event_type:
            self.events.append(decision.event_type)
        self.was_sent = self.was_sent or self.job.status is JobStatus.SENT

    @precondition(lambda self: self.job.status is JobStatus.IN_FLIGHT)
    @rule()
    def lease_runs_out(self) -> None:
        attempts = self.job.attempts
        decision = model.decide_lease_expired(attempts)
        self.job = model.decided(self.job, decision, self.now)
        assert self.job.attempts == attempts  # keeps its attempt count

    @precondition(lambda self: self.job.status is JobStatus.IN_FLIGHT)
    @rule(seconds=st.integers(min_value=0, max_value=60))
    def no_rate_slot(self, seconds: int) -> None:
        attempts = self.job.attempts
        self.job = model.deferred(self.job, self.now, timedelta(seconds=seconds))
        assert self.job.attempts == attempts - 1

    @rule()
    def operator_retries(self) -> None:
        if self.job.status is not JobStatus.FAILED:
            with pytest.raises(InvalidJobTransition):
                model.retried(self.job, self.now)
            return
        self.job = model.retried(self.job, self.now)
        assert self.job.attempts == 0 and self.job.next_attempt_at == self.now
        assert self.job.lease_token > self.tokens[-1]  # every earlier claim is fenced off

    @invariant()
    def sent_is_final(self) -> None:
        if self.was_sent:
            assert self.job.status is JobStatus.SENT
            assert self.events.count(EXCHANGE_SENT) == 1

    @invariant()
    def attempts_are_bounded(self) -> None:
        assert 0 <= self.job.attempts <= SEND_MAX_ATTEMPTS

    @invariant()
    def lease_exactly_while_in_flight(self) -> None:
        assert (self.job.lease_expires_at is not None) == (self.job.status is JobStatus.IN_FLIGHT)

    @invariant()
    def completed_exactly_when_final(self) -> None:
        final = self.job.status in (JobStatus.SENT, JobStatus.FAILED)
        assert (self.job.completed_at is not None) == final

    @invariant()
    def identity_is_stable(self) -> None:
        assert self.job.correlation_id == self.correlation
        assert self.tokens == sorted(set(self.tokens))  # strictly increasing fencing tokens


TestSendJobMachine = SendJobMachine.TestCase
