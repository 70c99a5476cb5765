"""``craig serve``: the HTTP API (and, in memory/embedded, the background workers)."""

from __future__ import annotations

import asyncio
import signal
import socket
from contextlib import AsyncExitStack
from typing import Any

import click
import structlog

from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.cli.common import ExitCode, Refused, exit_codes
from craig.entrypoints.runtime import running

log = structlog.get_logger(__name__)


@click.command(epilog=exit_codes(ok="stopped after a graceful shutdown (SIGTERM or Ctrl-C)", interrupted=None))
@click.option(
    "--host", metavar="HOST", default=None, help="Interface to bind (default: CRAIG_HTTP__HOST, else 127.0.0.1)."
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Port to listen on (default: CRAIG_HTTP__PORT, else 8000).",
)
def serve(host: str | None, port: int | None) -> int:
    """Serve the HTTP API.

    In the memory and embedded profiles the background workers run in this process too; in
    production run `craig worker` next to it (CRAIG_WORKERS__IN_PROCESS overrides either way).
    The embedded profile starts its PostgreSQL and migrates it; production checks that the
    schema is at head (`craig db upgrade` first). RabbitMQ or the object store being down does
    not stop it: it starts degraded (a warning, and /health/ready says so) and reconnects when
    they are back; wrong credentials are still refused. SIGTERM or Ctrl-C drain requests in flight,
    stop the workers and exit 0.
    """
    import uvicorn

    from craig.entrypoints import metrics, operations
    from craig.entrypoints.http.app import create_app
    from craig.entrypoints.ops_server import METRICS_CONTENT_TYPE, Answer, ops_server
    from craig.entrypoints.workers.messaging import consumers_running_when_reachable
    from craig.entrypoints.workers.runner import workers_running

    container = bootstrap()
    settings = container.settings()
    host = host or settings.http.host
    port = settings.http.port if port is None else port
    _check_can_listen(host, port)
    metrics_port = settings.http.metrics_port
    if metrics_port:
        _check_can_listen(host, metrics_port, "CRAIG_HTTP__METRICS_PORT")
    refreshers = operations.metric_refreshers(container)

    async def prometheus() -> Answer:
        return Answer(200, METRICS_CONTENT_TYPE, await metrics.render(refreshers))

    lifespans: list[Any] = []
    if settings.run_workers_in_process:
        lifespans.append(lambda _app: workers_running(container, wait_for_broker=True))
    else:  # per-instance caches still need their broadcast events (rule-set invalidation)
        lifespans.append(lambda _app: consumers_running_when_reachable(container, broadcast_only=True))
    # The dependencies start here, not in the app's lifespan, so that one that cannot be
    # reached is refused in one line (exit 2) rather than as uvicorn's lifespan traceback.
    app = create_app(container, lifespans=lifespans, manage_runtime=False)
    # proxy_headers=False: X-Forwarded-For is honoured only from CRAIG_HTTP__TRUSTED_PROXIES,
    # never by uvicorn's own default of trusting 127.0.0.1. log_config=None: uvicorn installs no
    # handlers of its own, its records go through Craig's one pipeline (craig.entrypoints.logging);
    # access_log=False: Craig writes its own access line (craig.access), by route template.
    config = uvicorn.Config(
        app, host=host, port=port, log_config=None, access_log=False, lifespan="on", proxy_headers=False
    )
    server = uvicorn.Server(config)

    async def main() -> int:
        # RabbitMQ and the object store may be down: the API starts degraded (readiness says so)
        # and reaches them when they are back; the database it cannot do without.
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(running(container, tolerate=("object_store", "broker")))
            if metrics_port:  # /metrics off the public API
                await stack.enter_async_context(ops_server(host, metrics_port, {"/metrics": prometheus}))
            log.info("serving", profile=settings.profile.value, url=f"http://{host}:{port}")
            # uvicorn handles SIGTERM/SIGINT gracefully, then re-raises the signal to the handler
            # it found; after a complete graceful shutdown nothing is left to do: exit 0.
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda _signum, _frame: None)
            try:
                await server.serve()
            except SystemExit:  # uvicorn gives up by itself when it cannot bind after all
                if server.started:
                    raise
        return ExitCode.OK if server.started else ExitCode.USAGE

    with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:  # uvicorn's loop (uvloop if any)
        return runner.run(main())


def _check_can_listen(host: str, port: int, setting: str = "--port (CRAIG_HTTP__PORT)") -> None:
    """Refuse in one line, before anything starts, when ``host:port`` cannot be bound."""
    fix = f"choose another {setting} or stop what listens there"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as error:
        raise Refused(f"cannot listen on {host}:{port}: {error}; check --host (CRAIG_HTTP__HOST)") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as error:
            raise Refused(f"cannot listen on {host}:{port}: {error.strerror or error}; {fix}") from None
