"""Use case: an operator puts a failed send job back in the queue.

A job fails after its last attempt, at once on a status that retrying cannot help, or when its
partner is gone or its secret cannot be opened; once the cause is fixed, a supervisor retries
it with a fresh attempt budget.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal, Role
from craig.domain.audit import AuditAction
from craig.domain.errors import NotFound
from craig.domain.exchange import InvalidJobTransition, JobStatus, SendJob
from craig.ports.exchange import HasSendJobs
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import SEND_JOB


class RetrySendJobWork(AuditWork, HasSendJobs, Protocol):
    """The unit of work :class:`RetrySendJob` uses."""


class RetrySendJob:
    """Supervisors (and admins) put a ``failed`` job back in the queue, due now, with a fresh
    attempt budget. 404 for an unknown job; 409 ``invalid-job-transition`` unless it is failed.

    An operator's action: recorded as ``job_retry`` by the principal, in the same transaction as
    the retry; a 403 or 404 as ``denied``. A 409 changes nothing and records nothing."""

    def __init__(self, uow: RetrySendJobWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, job_id: UUID) -> SendJob:
        async with refusals_recorded(self.uow, principal, AuditAction.JOB_RETRY, SEND_JOB, job_id):
            principal.require(Role.SUPERVISOR, Role.ADMIN)
            async with self.uow:
                job = await self.uow.send_jobs.retry_failed(job_id)
                if job is None:
                    current = await self.uow.send_jobs.get(job_id)
                    if current is None:
                        raise NotFound("send job", job_id)
                    raise InvalidJobTransition(current.status, JobStatus.PENDING)
                await record(self.uow, principal, AuditAction.JOB_RETRY, SEND_JOB, job.id)
                await self.uow.commit()
        return job
