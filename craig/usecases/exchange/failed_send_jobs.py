"""Use case: an operator lists the send jobs that failed for good, and puts them back in the queue.

A job fails after its last attempt, at once on an answer retrying cannot help, or when its
partner cannot be used; it stays ``failed`` until someone retries it. Supervisors can retry one
over HTTP (``POST /v1/exchange/jobs/{id}/retry``), given its id; an operator at the command line
finds them (``craig exchange failed``) and retries them (``craig exchange retry --id``), once the
cause is fixed. A retry is the same transition as the route's (:meth:`SendJobRepository.retry_failed`:
pending, due now, a fresh attempt budget, a new fencing token), recorded as ``job_retry`` by the
operator in the same transaction.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Protocol
from uuid import UUID

from craig.domain.audit import AuditAction
from craig.domain.exchange import SendJob
from craig.ports.exchange import HasSendJobs
from craig.usecases.audit.record import AuditWork, operator_entry
from craig.usecases.audit.resource_types import SEND_JOB


class FailedSendJobsWork(AuditWork, HasSendJobs, Protocol):
    """The unit of work :class:`FailedSendJobs` uses."""


class FailedSendJobs:
    def __init__(self, uow_factory: Callable[[], FailedSendJobsWork]) -> None:
        self.uow_factory = uow_factory

    async def failed(self, limit: int) -> list[SendJob]:
        """Up to ``limit`` failed jobs, the most recently failed first."""
        uow = self.uow_factory()
        async with uow:
            return await uow.send_jobs.failed(limit)

    async def retry(self, job_ids: Sequence[UUID]) -> AsyncIterator[SendJob]:
        """Put each of ``job_ids`` that is ``failed`` back in the queue, each in a transaction of
        its own with its ``job_retry`` entry, yielding it as retried as soon as it commits (a
        caller stopped half way has reported every job it retried). An id that is not a failed
        job (unknown, pending, sent, retried already) changes nothing and is not yielded. Of two
        operators retrying one job at once, one retries and records it."""
        for job_id in sorted(set(job_ids), key=str):
            uow = self.uow_factory()
            async with uow:
                job = await uow.send_jobs.retry_failed(job_id)
                if job is None:
                    continue
                await uow.audit.append([operator_entry(AuditAction.JOB_RETRY, SEND_JOB, job.id)])
                await uow.commit()
            yield job
