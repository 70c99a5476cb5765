"""Domain properties of partner exchange: the seed's backoff, outcome classification, decisions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from craig.domain.constants import SEND_BACKOFF_SCHEDULE, SEND_MAX_ATTEMPTS, SEND_RETRY_AFTER_CAP
from craig.domain.event_catalogue import EXCHANGE_SEND_FAILED, EXCHANGE_SENT
from craig.domain.exchange import (
    JobStatus,
    PartnerAnswer,
    TransportFailure,
    Verdict,
    backoff,
    classify,
    decide_after_attempt,
    decide_lease_expired,
)

pytestmark = pytest.mark.unit

SEED = {1: 5, 2: 30, 3: 120, 4: 300, 5: 900}
statuses = st.integers(min_value=100, max_value=599)
retry_afters = st.none() | st.integers(min_value=0, max_value=10 * 3600).map(lambda s: timedelta(seconds=s))
results = st.builds(PartnerAnswer, statuses, retry_afters) | st.builds(
    TransportFailure, st.sampled_from(["timeout", "connection"])
)


def test_backoff_is_the_seed_schedule() -> None:
    for attempts, seconds in SEED.items():
        assert backoff(attempts) == timedelta(seconds=seconds)
    assert backoff(6) == timedelta(minutes=30)
    assert SEND_MAX_ATTEMPTS == 6


@given(st.integers(min_value=6, max_value=10_000))
def test_backoff_caps_at_thirty_minutes(attempts: int) -> None:
    assert backoff(attempts) == timedelta(minutes=30)


@given(st.integers(min_value=1, max_value=100), st.integers(min_value=1, max_value=100))
def test_backoff_never_shrinks_as_attempts_grow(a: int, b: int) -> None:
    low, high = sorted((a, b))
    assert backoff(low) <= backoff(high)


@given(st.integers(max_value=0))
def test_backoff_counts_attempts_from_one(attempts: int) -> None:
    with pytest.raises(ValueError):
        backoff(attempts)


@given(statuses)
def test_classification_of_every_status(status: int) -> None:
    verdict = classify(PartnerAnswer(status))
    if 200 <= status < 300:
        assert verdict is Verdict.SENT
    elif status in (408, 425, 429) or status >= 500:
        assert verdict is Verdict.RETRY
    else:
        assert verdict is Verdict.FAIL


@given(st.sampled_from(["timeout", "connection"]))
def test_transport_failures_retry(kind: str) -> None:
    assert classify(TransportFailure(kind, "boom")) is Verdict.RETRY


@given(st.integers(min_value=1, max_value=SEND_MAX_ATTEMPTS), results)
def test_decision_after_an_attempt(attempts: int, result: PartnerAnswer | TransportFailure) -> None:
    decision = decide_after_attempt(attempts, result)
    verdict = classify(result)
    if verdict is Verdict.SENT:
        assert decision.status is JobStatus.SENT and decision.event_type == EXCHANGE_SENT
        assert decision.error is None
    elif verdict is Verdict.FAIL or attempts == SEND_MAX_ATTEMPTS:
        assert decision.status is JobStatus.FAILED and decision.event_type == EXCHANGE_SEND_FAILED
        assert decision.error
    else:
        assert decision.status is JobStatus.PENDING and decision.event_type is None
        assert decision.error
        retry_after = result.retry_after if isinstance(result, PartnerAnswer) else None
        expected = backoff(attempts)
        if retry_after is not None:
            expected = max(expected, min(retry_after, SEND_RETRY_AFTER_CAP))
        assert decision.retry_in == expected
        assert decision.retry_in is not None and decision.retry_in >= backoff(attempts)


def test_a_longer_retry_after_is_honoured_and_a_shorter_one_is_not() -> None:
    longer = decide_after_attempt(1, PartnerAnswer(429, timedelta(seconds=90)))
    shorter = decide_after_attempt(1, PartnerAnswer(429, timedelta(seconds=2)))
    assert longer.retry_in == timedelta(seconds=90)
    assert shorter.retry_in == timedelta(seconds=5)


def test_a_faster_schedule_may_be_passed_for_tests() -> None:
    fast = (timedelta(milliseconds=10),)
    decision = decide_after_attempt(3, PartnerAnswer(503), schedule=fast)
    assert decision.retry_in == timedelta(milliseconds=10)


@given(st.integers(min_value=1, max_value=20))
def test_an_expired_lease_requeues_at_once_until_the_last_attempt(attempts: int) -> None:
    decision = decide_lease_expired(attempts)
    if attempts >= SEND_MAX_ATTEMPTS:
        assert decision.status is JobStatus.FAILED and decision.event_type == EXCHANGE_SEND_FAILED
    else:
        assert decision.status is JobStatus.PENDING and decision.retry_in == timedelta(0)
        assert decision.event_type is None


def test_schedule_constant_matches_the_seed() -> None:
    assert [int(d.total_seconds()) for d in SEND_BACKOFF_SCHEDULE] == [5, 30, 120, 300, 900, 1800]
