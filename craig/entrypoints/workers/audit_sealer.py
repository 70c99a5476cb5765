"""The audit sealer loop: chains committed audit entries, a batch at a time, every few seconds.

Any number of workers may run it: sealing passes take turns on a transaction-level advisory
lock, so the chain never forks, and none waits on a request.
"""

from __future__ import annotations

from craig.domain.constants import AUDIT_SEAL_INTERVAL
from craig.entrypoints.container import Container
from craig.entrypoints.workers.loop import Loop


def audit_sealer_loop(container: Container) -> Loop:
    seal = container.audit.seal()
    return Loop("audit-sealer", seal.run_once, AUDIT_SEAL_INTERVAL)
