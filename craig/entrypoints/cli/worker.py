"""``craig worker``: the background loops, without the HTTP API, with its own probes and metrics."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from contextlib import AsyncExitStack

import click
import structlog

from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.cli.common import ExitCode, Refused, exit_codes, run
from craig.entrypoints.runtime import running

log = structlog.get_logger(__name__)


@click.command(epilog=exit_codes(ok="stopped after a graceful shutdown (SIGTERM or Ctrl-C)", interrupted=None))
def worker() -> int:
    """Run the background loops alone.

    The outbox relay, the event consumers, the attachment scanner, the partner send-job worker,
    the cleanup worker and the audit sealer, in one process; start as many as you like, on any
    machine (they coordinate through PostgreSQL row locks). /health/live, /health/ready and
    /metrics are served on CRAIG_WORKERS__METRICS_PORT (default 9464, 0: none) at
    CRAIG_HTTP__HOST; a second worker on the same host needs a port of its own (or 0).
    SIGTERM or Ctrl-C finish the work in hand and exit 0.
    """
    from craig.entrypoints.ops_server import CannotListen
    from craig.entrypoints.workers.health import worker_health_server
    from craig.entrypoints.workers.runner import build_loops, workers_running

    container = bootstrap()
    settings = container.settings()

    async def main() -> int:
        stop, started = asyncio.Event(), asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        work = asyncio.create_task(serve(stop, started))
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({work, stopped}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if stop.is_set() and not started.is_set() and not work.done():
            # Told to stop while still starting (a database or broker that does not answer
            # holds the start for its timeout): nothing is in hand to finish, so stop now.
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work
            log.info("worker stopped while starting")
            return ExitCode.OK
        return await work

    async def serve(stop: asyncio.Event, started: asyncio.Event) -> int:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(running(container))
            loops = build_loops(container)
            port = settings.workers.metrics_port
            if port:
                try:
                    port = await stack.enter_async_context(
                        worker_health_server(settings.http.host, port, loops, container.event_bus())
                    )
                except CannotListen as error:
                    raise Refused(
                        f"{error}; choose another CRAIG_WORKERS__METRICS_PORT (0: none) or stop what listens there"
                    ) from None
            await stack.enter_async_context(workers_running(container, loops))
            started.set()
            log.info(
                "worker running",
                profile=settings.profile.value,
                metrics=f"http://{settings.http.host}:{port}/metrics" if port else "off",
            )
            await stop.wait()
        return ExitCode.OK

    return run(main())
