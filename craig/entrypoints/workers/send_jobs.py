"""The partner send-job worker loop: woken by NOTIFY when jobs are enqueued, and polling every
``SEND_POLL_INTERVAL`` (1 s) for due retries, at most ``exchange.max_concurrency`` dispatches at
once in this process (:class:`~.send_job_scheduler.SendJobScheduler`).

On stop, the loop lets dispatches in flight finish (bounded) and records their outcomes, so a
clean shutdown does not leave jobs to wait for their leases.
"""

from __future__ import annotations

import asyncio

import attrs

from craig.domain.constants import SEND_POLL_INTERVAL
from craig.entrypoints.container import Container
from craig.entrypoints.workers.loop import Loop
from craig.entrypoints.workers.send_job_scheduler import SendJobScheduler


@attrs.frozen
class SendJobLoop(Loop):
    worker: SendJobScheduler | None = None

    async def run(self, stop: asyncio.Event) -> None:
        try:
            await super().run(stop)
        finally:
            if self.worker is not None:
                try:
                    await self.worker.finish()
                finally:
                    await self.worker.aclose()


def send_job_scheduler(container: Container) -> SendJobScheduler:
    """The deployment's send-job worker: its queue, use cases and policy from the container."""
    return SendJobScheduler(
        container.send_job_queue(),
        container.dispatch_send_job(),
        container.recover_expired_send_jobs(),
        container.give_back_send_jobs(),
        container.reserve_send_slot(),
        container.send_policy(),
        container.send_outcome_observer(),
    )


def send_job_loop(container: Container) -> Loop:
    worker = send_job_scheduler(container)
    return SendJobLoop("send-jobs", worker.run_once, SEND_POLL_INTERVAL, idle=worker.wait_for_jobs, worker=worker)
