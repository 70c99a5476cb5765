"""Which background loops a deployment runs (the one list to extend).

What each loop works with (its use case, policy and schedule) comes from the container; this
module only lists the loops.
"""

from __future__ import annotations

from craig.domain.constants import CLEANUP_INTERVAL
from craig.entrypoints.container import Container
from craig.entrypoints.workers.attachment_scanner import attachment_scanner_loop
from craig.entrypoints.workers.audit_sealer import audit_sealer_loop
from craig.entrypoints.workers.loop import Loop
from craig.entrypoints.workers.messaging import relay_loop
from craig.entrypoints.workers.send_jobs import send_job_loop
from craig.usecases.operations import PurgeExpired


def cleanup_loop(container: Container) -> Loop:
    """Purges what the container's ``purge_expired`` retentions name, a batch per table a pass."""
    purge: PurgeExpired = container.purge_expired()
    return Loop("cleanup", purge.run_once, CLEANUP_INTERVAL)


def loops_for(container: Container) -> list[Loop]:
    return [
        cleanup_loop(container),
        # outbox relay; the inbox consumers run in `workers_running`
        relay_loop(container),
        attachment_scanner_loop(container),
        # partner send-job worker
        send_job_loop(container),
        audit_sealer_loop(container),
    ]
