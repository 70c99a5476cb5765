"""Partner exchange: send jobs, their state machine, the backoff and outcome rules.

A send job (a row of ``exchange_send_jobs``) delivers one transaction's payload to one partner.
``attempts`` counts dispatches *started*: a claim adds one, so a worker that dies mid-dispatch
has still used an attempt and a poison job cannot loop forever; a lease that runs out returns
the job to ``pending`` keeping that count.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import attrs

from craig.domain.constants import (
    SEND_BACKOFF_SCHEDULE,
    SEND_JOB_ERROR_MAX_CHARS,
    SEND_MAX_ATTEMPTS,
    SEND_RETRY_AFTER_CAP,
)
from craig.domain.errors import Conflict
from craig.domain.event_catalogue import EXCHANGE_SEND_FAILED, EXCHANGE_SENT, EventType

RETRYABLE_STATUSES = frozenset({408, 425, 429})
LEASE_EXPIRED_ERROR = "lease expired: the worker stopped during the dispatch"


class JobStatus(enum.StrEnum):
    PENDING = "pending"
    IN_FLIGHT = "in_flight"
    SENT = "sent"
    FAILED = "failed"


#: Every allowed move. ``sent`` is final; ``failed`` leaves only through an operator's retry.
TRANSITIONS: Mapping[JobStatus, frozenset[JobStatus]] = {
    JobStatus.PENDING: frozenset({JobStatus.IN_FLIGHT}),
    JobStatus.IN_FLIGHT: frozenset({JobStatus.PENDING, JobStatus.SENT, JobStatus.FAILED}),
    JobStatus.FAILED: frozenset({JobStatus.PENDING}),
    JobStatus.SENT: frozenset(),
}


class InvalidJobTransition(Conflict):
    code = "invalid-job-transition"

    def __init__(self, current: JobStatus, target: JobStatus) -> None:
        super().__init__(f"a {current} send job cannot become {target}")
        self.problem_extra = {"status": str(current)}


def check_transition(current: JobStatus, target: JobStatus, *, only_from: JobStatus | None = None) -> None:
    """Raise :class:`InvalidJobTransition` unless ``current -> target`` is allowed (and, for moves
    that one source state owns, ``current`` is ``only_from``)."""
    if target not in TRANSITIONS[current] or (only_from is not None and current is not only_from):
        raise InvalidJobTransition(current, target)


@attrs.frozen(kw_only=True)
class SendJob:
    id: UUID
    transaction_id: UUID
    partner_id: UUID
    correlation_id: UUID
    payload: Mapping[str, Any]
    status: JobStatus = JobStatus.PENDING
    attempts: int = 0
    last_error: str | None = None
    next_attempt_at: datetime
    created_at: datetime
    completed_at: datetime | None = None
    lease_expires_at: datetime | None = None
    #: Fencing token: +1 on every claim and every operator's retry, never reset, so a worker
    #: whose lease was taken over (or whose job was retried since) cannot record its outcome.
    lease_token: int = 0
    #: The ``X-Request-ID`` of the request that made the job (sent to the partner as
    #: ``X-Request-ID``); not ``correlation_id``, which is the job's own, per job.
    origin_request_id: str | None = None
    #: The W3C trace context the job was made in (sent to the partner as ``traceparent``).
    traceparent: str | None = None


Schedule = Sequence[timedelta]


def backoff(attempts: int, schedule: Schedule = SEND_BACKOFF_SCHEDULE) -> timedelta:
    """The default retry schedule: 1 -> 5 s, 2 -> 30 s, 3 -> 2 min, 4 -> 5 min, 5 -> 15 min, then 30 min.

    ``attempts`` is the number of dispatches made so far (>= 1). Tests may pass a faster
    ``schedule``; production always runs the default.
    """
    if attempts < 1:
        raise ValueError("attempts counts from 1")
    return schedule[min(attempts, len(schedule)) - 1]


# --- what the partner answered ----------------------------------------------------------------


@attrs.frozen
class PartnerAnswer:
    """The partner (or its token endpoint) answered with an HTTP status. ``detail`` is the
    partner's own words (a snippet of its body, which may echo the payload back): it may be
    shown to the caller of a read, never stored (see :func:`recorded_error`)."""

    status: int
    retry_after: timedelta | None = None
    detail: str = ""
    at_token_endpoint: bool = False


@attrs.frozen
class TransportFailure:
    """No answer: ``kind`` is ``timeout``, ``connection`` or ``protocol``. ``detail`` is Craig's
    own words (an exception's class name, a fixed phrase), never bytes the peer sent."""

    kind: str
    detail: str = ""
    at_token_endpoint: bool = False


DispatchResult = PartnerAnswer | TransportFailure


class Verdict(enum.StrEnum):
    SENT = "sent"
    RETRY = "retry"
    FAIL = "fail"


def classify(result: DispatchResult) -> Verdict:
    """2xx sent; 408, 425, 429, 5xx, timeouts and connection errors retry; anything else fails."""
    if isinstance(result, TransportFailure):
        return Verdict.RETRY
    if 200 <= result.status < 300:
        return Verdict.SENT
    if result.status in RETRYABLE_STATUSES or 500 <= result.status < 600:
        return Verdict.RETRY
    return Verdict.FAIL


_STATUS_CLASSES = {1: "informational", 2: "success", 3: "redirect", 4: "client error", 5: "server error"}


def _where(result: DispatchResult) -> str:
    return "token endpoint" if result.at_token_endpoint else "partner"


def describe(result: DispatchResult) -> str:
    """The result with the partner's own words, for the caller of a read (an upstream error);
    never stored: a partner may echo the payload back."""
    text = recorded_error(result)
    if isinstance(result, PartnerAnswer) and result.detail:
        text += f": {result.detail}"
    return text[:SEND_JOB_ERROR_MAX_CHARS]


def recorded_error(result: DispatchResult) -> str:
    """What a send job keeps of a failed attempt (``last_error``, shown to admins, carried by
    ``exchange.send_failed``): where it failed, the status and its class, or the kind of
    transport failure. Never the partner's body, which may echo the payload (a child's name)
    back, and is not needed to decide anything: the partner logs its own answers, and the
    correlation id finds them there."""
    if isinstance(result, TransportFailure):
        text = f"{result.kind} at the {_where(result)}" + (f" ({result.detail})" if result.detail else "")
    else:
        kind = _STATUS_CLASSES.get(result.status // 100, "unknown status")
        text = f"{_where(result)} answered {result.status} ({kind})"
    return text[:SEND_JOB_ERROR_MAX_CHARS]


def headline(error: str | None) -> str | None:
    """The part of an error an event may carry: its first clause (``partner answered 422
    (client error)``, ``lease expired``). Errors written before :func:`recorded_error` quoted the
    partner after a colon (rows older than migration 0016 are cut the same way)."""
    return None if error is None else error.split(":", 1)[0].strip()


@attrs.frozen
class AttemptDecision:
    """What to record after an attempt: the new status, when to retry, what to stage."""

    status: JobStatus
    retry_in: timedelta | None = None
    error: str | None = None
    event_type: EventType | None = None


def decide_after_attempt(
    attempts: int,
    result: DispatchResult,
    max_attempts: int = SEND_MAX_ATTEMPTS,
    schedule: Schedule = SEND_BACKOFF_SCHEDULE,
) -> AttemptDecision:
    """The outcome of dispatch number ``attempts`` (counted from 1) of an ``in_flight`` job."""
    verdict = classify(result)
    if verdict is Verdict.SENT:
        return AttemptDecision(JobStatus.SENT, event_type=EXCHANGE_SENT)
    error = recorded_error(result)
    if verdict is Verdict.FAIL or attempts >= max_attempts:
        return AttemptDecision(JobStatus.FAILED, error=error, event_type=EXCHANGE_SEND_FAILED)
    delay = backoff(attempts, schedule)
    if isinstance(result, PartnerAnswer) and result.retry_after is not None:
        delay = max(delay, min(result.retry_after, SEND_RETRY_AFTER_CAP))
    return AttemptDecision(JobStatus.PENDING, retry_in=delay, error=error)


def decide_lease_expired(attempts: int, max_attempts: int = SEND_MAX_ATTEMPTS) -> AttemptDecision:
    """An ``in_flight`` job whose worker vanished: due again at once, unless out of attempts."""
    if attempts >= max_attempts:
        return AttemptDecision(JobStatus.FAILED, error=LEASE_EXPIRED_ERROR, event_type=EXCHANGE_SEND_FAILED)
    return AttemptDecision(JobStatus.PENDING, retry_in=timedelta(0), error=LEASE_EXPIRED_ERROR)


# --- pure transitions (the memory adapter applies them; SQL mirrors them) ---------------------


def claimed(job: SendJob, now: datetime, lease: timedelta) -> SendJob:
    check_transition(job.status, JobStatus.IN_FLIGHT)
    return attrs.evolve(
        job,
        status=JobStatus.IN_FLIGHT,
        attempts=job.attempts + 1,
        lease_token=job.lease_token + 1,
        lease_expires_at=now + lease,
    )


def decided(job: SendJob, decision: AttemptDecision, now: datetime) -> SendJob:
    """Apply an :class:`AttemptDecision` (from an attempt or an expired lease) to an in-flight job."""
    check_transition(job.status, decision.status, only_from=JobStatus.IN_FLIGHT)
    if decision.status is JobStatus.SENT:
        return attrs.evolve(job, status=JobStatus.SENT, completed_at=now, lease_expires_at=None, last_error=None)
    if decision.status is JobStatus.FAILED:
        return attrs.evolve(
            job, status=JobStatus.FAILED, completed_at=now, lease_expires_at=None, last_error=decision.error
        )
    return attrs.evolve(
        job,
        status=JobStatus.PENDING,
        next_attempt_at=now + (decision.retry_in or timedelta(0)),
        lease_expires_at=None,
        last_error=decision.error,
    )


def deferred(job: SendJob, now: datetime, wait: timedelta) -> SendJob:
    """Give a claimed job back unsent (no rate-limit slot soon enough): the attempt is undone."""
    check_transition(job.status, JobStatus.PENDING, only_from=JobStatus.IN_FLIGHT)
    return attrs.evolve(
        job,
        status=JobStatus.PENDING,
        attempts=max(0, job.attempts - 1),
        next_attempt_at=now + wait,
        lease_expires_at=None,
    )


def retried(job: SendJob, now: datetime) -> SendJob:
    """An operator puts a failed job back in the queue with a fresh attempt budget. The lease
    token moves on too, so a late outcome of an attempt from before the retry (a worker still
    sending when its lease expired on the last attempt) is fenced off."""
    check_transition(job.status, JobStatus.PENDING, only_from=JobStatus.FAILED)
    return attrs.evolve(
        job,
        status=JobStatus.PENDING,
        attempts=0,
        next_attempt_at=now,
        completed_at=None,
        lease_token=job.lease_token + 1,
    )
