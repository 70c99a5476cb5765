"""The ``craig`` command for operators.

    craig serve [--host 127.0.0.1] [--port 8000]   the API (+ workers in memory/embedded)
    craig worker                                   the background loops alone
    craig db upgrade [REV] | db downgrade REV      migrations
    craig token --sub UUID --role ROLE --name NAME [--ttl SECONDS]
    craig status                                   queues, backlogs, slots
    craig dlx list [--limit N]                     dead-lettered events
    craig dlx replay (--id ID ... | --all) [--limit N]
    craig config                                   the settings reference
    craig keys rotate [--batch-size N]             re-encrypt fields under the newest key

Every command reads the same settings (``CRAIG_*``) and data dir. A startup problem prints one
line naming the setting or dependency and the fix, and exits 2.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog

from craig.domain.access import Role
from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.runtime import StartupError, running, start_database, stop_database
from craig.entrypoints.settings import Profile, SettingsError, reference

log = structlog.get_logger(__name__)
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def command(
    name: str,
) -> Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]]:
    def register(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        COMMANDS[name] = fn
        return fn

    return register


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="craig", description="Craig: the case-worker back end.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the HTTP API")
    serve.add_argument("--host", default=None, help="interface (default CRAIG_HTTP__HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default CRAIG_HTTP__PORT or 8000)")

    sub.add_parser("worker", help="run the background workers alone")

    db = sub.add_parser("db", help="database migrations")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    up = db_sub.add_parser("upgrade", help="apply migrations (default: to head)")
    up.add_argument("revision", nargs="?", default="head")
    down = db_sub.add_parser("downgrade", help="revert migrations to REVISION (e.g. -1, base)")
    down.add_argument("revision")

    token = sub.add_parser("token", help="print a development JWT (HS256 only)")
    token.add_argument("--sub", required=True, type=uuid.UUID, help="the user's UUID")
    token.add_argument("--role", required=True, choices=[r.value for r in Role])
    token.add_argument("--name", required=True)
    token.add_argument("--ttl", type=int, default=3600, help="lifetime in seconds (default 3600)")

    dlx = sub.add_parser("dlx", help="dead-lettered events")
    dlx_sub = dlx.add_subparsers(dest="dlx_command", required=True)
    listing = dlx_sub.add_parser("list", help="list dead letters, oldest first")
    listing.add_argument("--limit", type=int, default=100)
    replay = dlx_sub.add_parser("replay", help="send dead letters back to their queue, fresh retry budget")
    which = replay.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", dest="ids", action="append", type=uuid.UUID, help="an event id (repeatable)")
    which.add_argument("--all", action="store_true", help="every dead letter")
    replay.add_argument("--limit", type=int, default=1000)

    sub.add_parser("status", help="a summary for operators")
    sub.add_parser("config", help="print every setting with its default")

    keys = sub.add_parser("keys", help="field-encryption keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    rotate = keys_sub.add_parser("rotate", help="re-encrypt every encrypted column under the newest key")
    rotate.add_argument("--batch-size", type=int, default=None, help="rows per transaction (default 500)")
    return parser


def _terminate(signum: int, _frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so `finally` blocks run (an embedded PostgreSQL this command
    started is stopped). `serve` and `worker` install their own graceful handlers."""
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    args = _parser().parse_args(argv)
    name = args.command
    try:
        return COMMANDS[name](args)
    except (SettingsError, StartupError) as error:
        print(f"craig: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _run(coro: Awaitable[int]) -> int:
    return asyncio.run(coro)  # type: ignore[arg-type]


# --- serve / worker ---------------------------------------------------------------------------


@command("serve")
def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from craig.entrypoints.http.app import create_app
    from craig.entrypoints.workers.messaging import consumers_running
    from craig.entrypoints.workers.runner import workers_running

    container = bootstrap()
    settings = container.settings()
    lifespans: list[Any] = []
    if settings.run_workers_in_process:
        lifespans.append(lambda _app: workers_running(container))
    else:  # per-instance caches still need their broadcast events (rule-set invalidation)
        lifespans.append(lambda _app: consumers_running(container, broadcast_only=True))
    app = create_app(container, lifespans=lifespans)
    host = args.host or settings.http.host
    port = args.port or settings.http.port
    log.info("serving", profile=settings.profile.value, url=f"http://{host}:{port}")
    # proxy_headers=False: X-Forwarded-For is honoured only from CRAIG_HTTP__TRUSTED_PROXIES (issue 8),
    # never by uvicorn's own default of trusting 127.0.0.1.
    config = uvicorn.Config(
        app, host=host, port=port, log_config=None, access_log=False, lifespan="on", proxy_headers=False
    )
    server = uvicorn.Server(config)
    # uvicorn handles SIGTERM/SIGINT gracefully, then re-raises the signal to the previous handler;
    # after a complete graceful shutdown nothing is left to do, so `craig serve` exits 0.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda _signum, _frame: None)
    server.run()
    return 0 if server.started else 2


@command("worker")
def _worker(args: argparse.Namespace) -> int:
    from craig.entrypoints.workers.runner import workers_running

    container = bootstrap()

    async def run() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with running(container), workers_running(container):
            log.info("worker running", profile=container.settings().profile.value)
            await stop.wait()
        return 0

    return _run(run())


# --- db ------------------------------------------------------------------------------------------


@command("db")
def _db(args: argparse.Namespace) -> int:
    from craig.adapters.postgres import migrations

    container = bootstrap()
    if container.settings().profile is Profile.MEMORY:
        print("craig: the memory profile has no database to migrate", file=sys.stderr)
        return 2

    async def run() -> int:
        # The database alone: migrating needs neither the broker nor the object store.
        await start_database(container, schema="ignore")
        try:
            url = container.database_url()
            if args.db_command == "upgrade":
                await asyncio.to_thread(migrations.upgrade, url, args.revision)
            else:
                await asyncio.to_thread(migrations.downgrade, url, args.revision)
        finally:
            await stop_database(container)
        print(f"database at revision {args.revision}")
        return 0

    return _run(run())


# --- token / status / config ------------------------------------------------------------------


@command("token")
def _token(args: argparse.Namespace) -> int:
    from craig.entrypoints.tokens import mint

    container = bootstrap()
    try:
        token = mint(
            container.settings().auth,
            sub=args.sub,
            role=Role(args.role),
            name=args.name,
            ttl_seconds=args.ttl,
        )
    except ValueError as error:
        print(f"craig: {error}", file=sys.stderr)
        return 2
    print(token)
    return 0


@command("status")
def _status(args: argparse.Namespace) -> int:
    from craig.entrypoints.status import collect_status, format_status

    container = bootstrap()

    async def run() -> int:
        async with running(container):
            report = await collect_status(container)
        print(format_status(report))
        return 0

    return _run(run())


@command("dlx")
def _dlx(args: argparse.Namespace) -> int:
    container = bootstrap()

    async def run() -> int:
        async with running(container):
            operations = container.dead_letter_operations()
            if args.dlx_command == "list":
                letters = await operations.peek(args.limit)
            else:
                letters = await operations.replay(None if args.all else args.ids, args.limit)
        verb = "replayed" if args.dlx_command == "replay" else "dead letters"
        print(f"{len(letters)} {verb}")
        for letter in letters:
            first = letter.first_failed_at.isoformat() if letter.first_failed_at else "-"
            print(
                f"{letter.event_id}  {letter.event_type:<40} queue={letter.queue} retries={letter.retry_count} "
                f"first_failed_at={first}\n    last_error: {letter.last_error}"
            )
        return 0

    return _run(run())


@command("keys")
def _keys(args: argparse.Namespace) -> int:
    from craig.entrypoints.keys import rotate

    if args.batch_size is not None and args.batch_size < 1:
        print("craig: --batch-size must be at least 1", file=sys.stderr)
        return 2
    container = bootstrap()
    if args.batch_size is not None:
        container.rotate_keys.add_kwargs(batch_size=args.batch_size)
    return _run(rotate(container))


@command("config")
def _config(args: argparse.Namespace) -> int:
    width = max(len(name) for name, _, _ in reference())
    for name, default, help_text in reference():
        print(f"{name:<{width}}  {default!r:<24}  {help_text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
