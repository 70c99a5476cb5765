"""Domain properties of partner exchange: the default backoff, outcome classification, decisions."""

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
    describe,
    headline,
    recorded_error,
)

pytestmark = pytest.mark.unit

DEFAULT_SCHEDULE = {1: 5, 2: 30, 3: 120, 4: 300, 5: 900}
statuses = st.integers(min_value=100, max_value=599)
retry_afters = st.none() | st.integers(min_value=0, max_value=10 * 3600).map(lambda s: timedelta(seconds=s))
results = st.builds(PartnerAnswer, statuses, retry_afters) | st.builds(
    TransportFailure, st.sampled_from(["timeout", "connection"])
)


def test_backoff_is_the_default_schedule() -> None:
    for attempts, seconds in DEFAULT_SCHEDULE.items():
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


@given(statuses, st.text(min_size=1), st.booleans(), st.integers(min_value=1, max_value=SEND_MAX_ATTEMPTS))
def test_a_recorded_error_never_holds_the_partners_words(
    status: int, body: str, at_token_endpoint: bool, attempts: int
) -> None:
    answer = PartnerAnswer(status, detail=f"\x01{body}\x02", at_token_endpoint=at_token_endpoint)
    decision = decide_after_attempt(attempts, answer)
    where = "token endpoint" if at_token_endpoint else "partner"
    if decision.error is not None:
        assert decision.error == recorded_error(answer)
        assert decision.error.startswith(f"{where} answered {status} (")
        assert "\x01" not in decision.error and headline(decision.error) == decision.error


def test_a_recorded_error_names_the_status_class_and_the_transport_failure() -> None:
    assert recorded_error(PartnerAnswer(422, detail='{"name": "Ann"}')) == "partner answered 422 (client error)"
    assert recorded_error(PartnerAnswer(503)) == "partner answered 503 (server error)"
    assert recorded_error(PartnerAnswer(302)) == "partner answered 302 (redirect)"
    assert recorded_error(TransportFailure("timeout", "ReadTimeout")) == "timeout at the partner (ReadTimeout)"
    token = TransportFailure("connection", "ConnectError", at_token_endpoint=True)
    assert recorded_error(token) == "connection at the token endpoint (ConnectError)"
    # A read's caller (an upstream error) still hears the partner's words; nothing stores them.
    assert describe(PartnerAnswer(422, detail="bad field")) == "partner answered 422 (client error): bad field"
