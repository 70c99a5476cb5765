"""The events of a send job's outcome (``exchange.sent``, ``exchange.send_failed``), staged by
the worker's pass (:class:`DispatchSendJob` decides them) and by :class:`RecoverExpiredSendJobs`
(a lease that ran out on the last attempt)."""

from __future__ import annotations

from datetime import datetime

from craig.domain.events import EventEnvelope
from craig.domain.exchange import AttemptDecision, JobStatus, SendJob, headline
from craig.usecases.events.staging import new_event


def outcome_event(job: SendJob, decision: AttemptDecision, now: datetime) -> EventEnvelope:
    """``exchange.sent`` or ``exchange.send_failed`` for a claimed job and a decision that stages
    one (``decision.event_type``), telling the job as it reads once the decision is recorded."""
    if decision.event_type is None:
        raise ValueError(f"a decision to {decision.status} the job stages no event")
    return new_event(
        decision.event_type,
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
        # The job's trace: its outcome's publish and consumers continue the request that made it.
        traceparent=job.traceparent,
    )
