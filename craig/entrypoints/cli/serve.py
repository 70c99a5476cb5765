"""``craig serve``: the HTTP API (and, in memory/embedded, the background workers)."""

from __future__ import annotations

import asyncio
import ctypes
import multiprocessing
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

import attrs
import click
import structlog

from craig.domain.constants import SERVE_MAX_WORKERS
from craig.entrypoints.bootstrap import bootstrap, prepare_settings
from craig.entrypoints.cli.common import ExitCode, Refused, StartInterrupts, exit_codes
from craig.entrypoints.collector import tuned_for_serving
from craig.entrypoints.container import Container, build_container, one_process_only
from craig.entrypoints.runtime import running

if TYPE_CHECKING:
    import uvicorn
    from litestar import Litestar

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
@click.option(
    "--workers",
    type=click.IntRange(1, SERVE_MAX_WORKERS),
    default=1,
    show_default=True,
    help=f"HTTP server processes sharing the port (1 to {SERVE_MAX_WORKERS}; embedded and production only).",
)
def serve(host: str | None, port: int | None, workers: int) -> int:
    """Serve the HTTP API.

    In the memory and embedded profiles the background workers run in this process too; in
    production run `craig worker` next to it (CRAIG_WORKERS__IN_PROCESS overrides either way).
    The embedded profile starts its PostgreSQL and migrates it; production checks that the
    schema is at head (`craig db upgrade` first). RabbitMQ or the object store being down does
    not stop it: it starts degraded (a warning, and /health/ready says so) and reconnects when
    they are back; wrong credentials are still refused. SIGTERM or Ctrl-C drain requests in flight,
    stop the workers and exit 0.

    With --workers N the HTTP API runs in N child processes on one port. This process starts
    the dependencies once (the embedded PostgreSQL too), runs the background workers when they
    run in process, watches the children (one that dies is replaced) and stops them all on
    SIGTERM or Ctrl-C.
    """
    from craig.entrypoints import metrics, operations
    from craig.entrypoints.http.app import create_app
    from craig.entrypoints.ops_server import METRICS_CONTENT_TYPE, Answer, ops_server
    from craig.entrypoints.workers.messaging import consumers_running_when_reachable
    from craig.entrypoints.workers.runner import workers_running

    container = bootstrap()
    settings = container.settings()
    host = host or settings.http.host
    port = settings.http.port if port is None else port
    if workers > 1 and one_process_only(settings):
        raise click.UsageError(
            "--workers above 1 needs the embedded or production profile: each process of the "
            "memory profile would keep its own data (CRAIG_PROFILE)"
        )
    _check_can_listen(host, port)
    metrics_port = settings.http.metrics_port
    if workers > 1:
        if metrics_port:
            raise click.UsageError(
                "--workers above 1 with CRAIG_HTTP__METRICS_PORT: each server process keeps its own "
                "metrics and only one process could bind that port; leave it unset (each process "
                "serves /metrics on the API port) or run one process per container"
            )
        return _serve_in_processes(container, host, port, workers)
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
    lifespans.append(tuned_for_serving)  # last: once everything the process keeps exists
    # The dependencies start here, not in the app's lifespan, so that one that cannot be
    # reached is refused in one line (exit 2) rather than as uvicorn's lifespan traceback.
    app = create_app(container, lifespans=lifespans, manage_runtime=False)
    config = _server_config(app, host, port)
    server = _orderly_server(config)

    async def main() -> int:
        # RabbitMQ and the object store may be down: the API starts degraded (readiness says so)
        # and reaches them when they are back; the database it cannot do without.
        async with AsyncExitStack() as stack:
            parts: list[AbstractAsyncContextManager[Any]] = [running(container, tolerate=("object_store", "broker"))]
            if metrics_port:  # /metrics off the public API
                parts.append(ops_server(host, metrics_port, {"/metrics": prometheus}))
            if not await StartInterrupts.enter(stack, *parts):
                log.info("stopped while starting")
                return ExitCode.OK
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


def _orderly_server(config: uvicorn.Config) -> uvicorn.Server:
    """uvicorn's server, except that a second Ctrl-C (uvicorn's force quit) stops only the wait for
    open connections, never the app's shutdown.

    uvicorn skips the lifespan shutdown on a force quit. Here that shutdown stops the background
    workers (each finishes or gives back what it holds, within ``WORKER_STOP_TIMEOUT``), and
    skipping it stopped the embedded PostgreSQL under loops still running, with a traceback."""
    import uvicorn
    from uvicorn.lifespan.on import LifespanOn

    class OrderlyServer(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            await super().shutdown(sockets)
            if not self.force_exit:
                return
            # Requests still in flight are abandoned: their connections are closed, and they end
            # on the disconnect (a handler waiting on a database is cancelled with the loop).
            for connection in list(self.server_state.connections):
                transport = getattr(connection, "transport", None)
                if transport is not None:
                    transport.close()
            if isinstance(self.lifespan, LifespanOn) and not self.lifespan.shutdown_event.is_set():
                log.warning("forced to quit: requests in flight abandoned; stopping the workers")
                await self.lifespan.shutdown()

    return OrderlyServer(config)


# --- several server processes (--workers N) -------------------------------------------------------
def _server_config(app: Any, host: str, port: int, **options: Any) -> uvicorn.Config:
    import uvicorn

    # proxy_headers=False: X-Forwarded-For is honoured only from CRAIG_HTTP__TRUSTED_PROXIES,
    # never by uvicorn's own default of trusting 127.0.0.1. log_config=None: uvicorn installs no
    # handlers of its own, its records go through Craig's one pipeline (craig.entrypoints.logging);
    # access_log=False: Craig writes its own access line (craig.access), by route template.
    return uvicorn.Config(
        app, host=host, port=port, log_config=None, access_log=False, lifespan="on", proxy_headers=False, **options
    )


def _serve_in_processes(container: Container, host: str, port: int, workers: int) -> int:
    """The parent of ``workers`` server processes: it starts the dependencies once (an embedded
    PostgreSQL is started and migrated here, and reused by the children), runs the background
    workers when they run in process, and supervises the children with uvicorn's
    :class:`~uvicorn.supervisors.Multiprocess` (a child that dies is replaced; SIGTERM or
    SIGINT stop them all, each draining its requests in flight)."""
    from uvicorn.supervisors import Multiprocess

    from craig.entrypoints.workers.runner import workers_running

    class Supervisor(Multiprocess):
        """Remembers whether it stopped because it was asked to (else a child could not start)."""

        asked_to_stop = False

        def handle_int(self) -> None:
            self.asked_to_stop = True
            super().handle_int()

        def handle_term(self) -> None:
            self.asked_to_stop = True
            super().handle_term()

    settings = container.settings()
    config = _server_config(f"{__name__}:child_app", host, port, factory=True, workers=workers)

    @asynccontextmanager
    async def background() -> AsyncIterator[None]:
        if settings.run_workers_in_process:
            async with workers_running(container, wait_for_broker=True):
                yield
        else:
            yield

    async def main() -> int:
        # as with one process: RabbitMQ or the object store down, it starts degraded
        async with AsyncExitStack() as stack:
            if not await StartInterrupts.enter(
                stack, running(container, tolerate=("object_store", "broker")), background()
            ):
                log.info("stopped while starting")
                return ExitCode.OK
            sock = config.bind_socket()
            try:
                # Multiprocess takes SIGTERM, SIGINT (and SIGHUP, SIGTTIN, SIGTTOU) from here on.
                supervisor = Supervisor(config, sockets=[sock])
                log.info(
                    "serving",
                    profile=settings.profile.value,
                    url=f"http://{host}:{port}",
                    workers=workers,
                    pid=os.getpid(),
                )
                await asyncio.to_thread(supervisor.run)
            finally:
                sock.close()
        # uvicorn logged which child could not start (it gives up rather than restart it forever)
        return ExitCode.OK if supervisor.asked_to_stop else ExitCode.USAGE

    return asyncio.run(main())


def child_app() -> Litestar:
    """The app of one child process of ``craig serve --workers N`` (uvicorn imports it by name).

    The parent already started the dependencies and runs the background workers: a child only
    reaches them (an embedded PostgreSQL running is reused, not started again, and its schema
    is checked rather than migrated) and consumes its broadcast events (rule-set invalidation
    for its own cache). Its instance id is its own, also when CRAIG_INSTANCE_ID is set."""
    from craig.entrypoints.http.app import create_app
    from craig.entrypoints.workers.messaging import consumers_running_when_reachable

    _stop_with_parent()
    settings = prepare_settings()
    if settings.instance_id:
        settings = attrs.evolve(settings, instance_id=f"{settings.instance_id}-{os.getpid()}")
    container = build_container(settings)
    lifespans: list[Any] = [
        lambda _app: running(container, schema="check", tolerate=("object_store", "broker")),
        lambda _app: consumers_running_when_reachable(container, broadcast_only=True),
        tuned_for_serving,
    ]
    return create_app(container, lifespans=lifespans, manage_runtime=False)


def _stop_with_parent() -> None:
    """Ask Linux for SIGTERM when the parent dies (SIGKILL, OOM): a child must not go on serving
    without the parent that runs the background workers and watches the children. Elsewhere
    there is no such request; the parent's SIGTERM and Ctrl-C still stop every child."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        log.warning("cannot ask to be stopped with the parent", errno=ctypes.get_errno())
        return
    # (Linux sends it when the parent's thread that started this child ends: that thread is
    # the supervisor's, which stops every child before it returns.)
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:  # the parent died before the request
        raise SystemExit(0)


#: ``prctl`` option: the signal the calling process gets when its parent dies.
_PR_SET_PDEATHSIG = 1


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
