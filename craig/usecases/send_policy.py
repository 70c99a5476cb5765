"""The send-job worker's tunables and the events it stages (``exchange.sent``, ``exchange.send_failed``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

import attrs

from craig.domain.constants import (
    SEND_BACKOFF_SCHEDULE,
    SEND_LEASE,
    SEND_MAX_ATTEMPTS,
    SEND_MAX_CONCURRENCY,
    SEND_MAX_RATE_WAIT,
    SEND_RECOVER_BATCH,
    SEND_RECOVER_INTERVAL,
    SEND_WAKE_LINGER,
)
from craig.domain.events import EventEnvelope
from craig.domain.exchange import AttemptDecision, JobStatus, SendJob, headline
from craig.usecases.events import new_event

EVENT_SOURCE = "craig-exchange"
#: ``observer(outcome, seconds)``: outcome is sent, retry, failed, deferred or lost.
Observer = Callable[[str, float], None]


@attrs.frozen
class SendPolicy:
    lease: timedelta = SEND_LEASE
    max_attempts: int = SEND_MAX_ATTEMPTS
    max_concurrency: int = SEND_MAX_CONCURRENCY
    #: Jobs claimed ahead of free dispatch slots, so each pass claims a whole batch while the
    #: previous one is sent. A prefetched job that waits past half its dispatch deadline is
    #: given back unsent. 0 claims only for free slots.
    prefetch: int = SEND_MAX_CONCURRENCY
    #: A claimed job whose rate-limit slot is further away is given back (``defer``).
    max_rate_wait: timedelta = SEND_MAX_RATE_WAIT
    recover_interval: timedelta = SEND_RECOVER_INTERVAL
    #: An idle worker woken by NOTIFY waits this long before it claims (see ``wait_for_jobs``).
    wake_linger: timedelta = SEND_WAKE_LINGER
    recover_batch: int = SEND_RECOVER_BATCH
    #: The seed's schedule; tests pass a faster one.
    backoff: Sequence[timedelta] = SEND_BACKOFF_SCHEDULE

    @property
    def claim_batch(self) -> int:
        """A pass waits until this many jobs fit in (running + ready), unless all are idle."""
        return max(1, (self.max_concurrency + self.prefetch) // 2)

    @property
    def dispatch_deadline(self) -> timedelta:
        """A dispatch (token, rate wait, POST, one 401 retry) is abandoned after this."""
        return self.lease - min(timedelta(seconds=5), self.lease / 10)


def outcome_event(job: SendJob, decision: AttemptDecision, now: datetime) -> EventEnvelope:
    """``exchange.sent`` or ``exchange.send_failed`` for a claimed job and its decision, telling
    the job as it reads once the decision is recorded (``decided``)."""
    return new_event(
        source=EVENT_SOURCE,
        type=decision.event_type or "",
        aggregate_type="exchange_send_job",
        aggregate_id=job.id,
        payload={
            "job_id": str(job.id),
            "transaction_id": str(job.transaction_id),
            "partner_id": str(job.partner_id),
            "correlation_id": str(job.correlation_id),
            "attempts": job.attempts,
            "status": str(decision.status),
            "last_error": None if decision.status is JobStatus.SENT else headline(decision.error),
        },
        now=now,
        correlation_id=job.correlation_id,
    )
