"""``craig worker``: the background loops, without the HTTP API."""

from __future__ import annotations

import asyncio
import signal

import click
import structlog

from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.cli.common import ExitCode, exit_codes, run
from craig.entrypoints.runtime import running

log = structlog.get_logger(__name__)


@click.command(epilog=exit_codes(ok="stopped after a graceful shutdown (SIGTERM or Ctrl-C)", interrupted=None))
def worker() -> int:
    """Run the background loops alone.

    The outbox relay, the event consumers, the attachment scanner, the partner send-job worker
    and the cleanup worker, in one process; start as many as you like, on any machine (they
    coordinate through PostgreSQL row locks). SIGTERM or Ctrl-C finish the work in hand and
    exit 0.
    """
    from craig.entrypoints.workers.runner import workers_running

    container = bootstrap()

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with running(container), workers_running(container):
            log.info("worker running", profile=container.settings().profile.value)
            await stop.wait()
        return ExitCode.OK

    return run(main())
