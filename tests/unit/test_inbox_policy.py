"""The inbox retry policy, driven by a Hypothesis state machine."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from craig.domain.constants import INBOX_BACKOFF_BASE, INBOX_BACKOFF_CAP, INBOX_MAX_RETRIES
from craig.domain.inbox import DeadLetter, RetryLater, after_failure

pytestmark = pytest.mark.unit


class DeliveryMachine(RuleBasedStateMachine):
    """One message: deliveries fail (retryably or not) or succeed, until it is done or dead."""

    def __init__(self) -> None:
        super().__init__()
        self._reset()

    def _reset(self) -> None:
        self.failures = 0
        self.retries = 0
        self.dead: DeadLetter | None = None
        self.processed = False

    @precondition(lambda self: self.dead is None and not self.processed)
    @rule(jitter=st.floats(0, 1), retryable=st.booleans())
    def fail(self, jitter: float, retryable: bool) -> None:
        self.failures += 1
        decision = after_failure(self.failures, retryable=retryable, jitter=jitter)
        if isinstance(decision, RetryLater):
            assert retryable
            self.retries += 1
            assert decision.retry_count == self.retries == self.failures
            nominal = min(INBOX_BACKOFF_CAP, INBOX_BACKOFF_BASE * 2 ** (self.failures - 1))
            assert nominal / 2 <= decision.delay <= nominal
        else:
            assert not retryable or self.failures == INBOX_MAX_RETRIES + 1
            assert decision.retry_count == self.failures - 1 == self.retries
            self.dead = decision

    @precondition(lambda self: self.dead is None and not self.processed)
    @rule()
    def succeed(self) -> None:
        self.processed = True

    @precondition(lambda self: self.dead is not None or self.processed)
    @rule()
    def next_message(self) -> None:
        self._reset()

    @invariant()
    def never_more_than_max_retries(self) -> None:
        assert self.retries <= INBOX_MAX_RETRIES
        assert not (self.processed and self.dead)


TestDeliveryMachine = DeliveryMachine.TestCase


@given(jitter=st.floats(0, 1))
def test_the_schedule_is_one_two_four_eight_sixteen_seconds_before_jitter(jitter: float) -> None:
    delays = [after_failure(n, retryable=True, jitter=jitter) for n in range(1, 6)]
    assert all(isinstance(d, RetryLater) for d in delays)
    for n, decision in enumerate(delays, start=1):
        assert isinstance(decision, RetryLater)
        nominal = timedelta(seconds=2 ** (n - 1))
        assert nominal / 2 <= decision.delay <= nominal
    assert after_failure(6, retryable=True, jitter=jitter) == DeadLetter(retry_count=5)
