"""The events of a send job's outcome (``exchange.sent``, ``exchange.send_failed``), staged by
the worker's pass (:class:`DispatchSendJob` decides them) and by :class:`RecoverExpiredSendJobs`
(a lease that ran out on the last attempt)."""

from __future__ import annotations

from datetime import datetime

from craig.domain.events import EventEnvelope
from craig.domain.exchange import AttemptDecision, JobStatus, SendJob, headline
from craig.usecases.events.staging import new_event

EVENT_SOURCE = "craig-exchange"


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
