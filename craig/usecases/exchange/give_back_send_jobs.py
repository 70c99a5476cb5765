"""Use case: give claimed, unsent send jobs back to the queue."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Protocol

from craig.domain.exchange import SendJob
from craig.ports.exchange import HasSendJobs
from craig.ports.unit_of_work import UnitOfWork


class GiveBackSendJobsWork(UnitOfWork, HasSendJobs, Protocol):
    """The unit of work :class:`GiveBackSendJobs` uses."""


class GiveBackSendJobs:
    """In one transaction, each job goes back to ``pending``, due in ``wait``, its attempt
    undone (:meth:`~craig.ports.exchange.SendJobRepository.defer`), as long as it still carries
    its claim's lease token. Returns how many went back; the others had lost their claim and
    are left to their new owner."""

    def __init__(self, uow_factory: Callable[[], GiveBackSendJobsWork]) -> None:
        self._uow = uow_factory

    async def __call__(self, jobs: Sequence[SendJob], wait: timedelta) -> int:
        uow = self._uow()
        async with uow:
            given_back = [await uow.send_jobs.defer(job, wait) for job in jobs]
            await uow.commit()
        return sum(given_back)
