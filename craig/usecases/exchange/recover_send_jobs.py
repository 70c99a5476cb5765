"""Use case: send jobs whose lease ran out go back to the queue (their workers vanished)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import structlog

from craig.domain.event_catalogue import EXCHANGE_SEND_FAILED
from craig.domain.exchange import AttemptDecision, JobStatus, SendJob
from craig.ports.clock import Clock
from craig.ports.exchange import HasSendJobs
from craig.ports.outbox import HasOutbox
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.events.staging import stage_event
from craig.usecases.exchange.outcome_events import outcome_event
from craig.usecases.exchange.send_policy import SendPolicy

log = structlog.get_logger(__name__)


class RecoverExpiredSendJobsWork(UnitOfWork, HasOutbox, HasSendJobs, Protocol):
    """The unit of work :class:`RecoverExpiredSendJobs` uses."""


class RecoverExpiredSendJobs:
    """In one transaction: up to ``policy.recover_batch`` ``in_flight`` jobs whose lease ran out
    go back to ``pending``, due now, or to ``failed`` once they used ``policy.max_attempts``
    (:meth:`~craig.ports.exchange.SendJobRepository.recover_expired`); each failed one has its
    ``exchange.send_failed`` staged with it. Returns the jobs as changed."""

    def __init__(
        self, uow_factory: Callable[[], RecoverExpiredSendJobsWork], clock: Clock, policy: SendPolicy | None = None
    ) -> None:
        self._uow = uow_factory
        self._clock = clock
        self.policy = policy or SendPolicy()

    async def __call__(self) -> list[SendJob]:
        uow = self._uow()
        async with uow:
            recovered = await uow.send_jobs.recover_expired(self.policy.max_attempts, self.policy.recover_batch)
            for job in recovered:
                if job.status is JobStatus.FAILED:
                    log.warning("send job failed: lease expired on its last attempt", job_id=str(job.id))
                    decision = AttemptDecision(JobStatus.FAILED, error=job.last_error, event_type=EXCHANGE_SEND_FAILED)
                    await stage_event(uow, outcome_event(job, decision, self._clock.now()))
            await uow.commit()
        return recovered
