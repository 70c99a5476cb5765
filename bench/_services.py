"""Services for benchmarks: a fresh migrated PostgreSQL database and the RabbitMQ URL."""

from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url

from craig.adapters.crypto.aesgcm import FieldEncryptor
from craig.adapters.postgres.database import libpq_dsn
from craig.adapters.postgres.embedded import EmbeddedPostgres
from craig.adapters.postgres.migrations import upgrade_to_head

RABBIT_URL = os.environ.get("CRAIG_BENCH_RABBIT_URL", "amqp://guest:guest@127.0.0.1:5672/")

#: The postmaster of the embedded server :func:`postgres_database` started (none while it runs
#: none, or on ``CRAIG_BENCH_DATABASE_URL``'s server): its processes' CPU can be read from ``/proc``.
EMBEDDED_POSTMASTER: list[int] = []


@contextmanager
def postgres_database() -> Iterator[str]:
    """A migrated database on CRAIG_BENCH_DATABASE_URL's server, or on an embedded PostgreSQL 18."""
    server_url = os.environ.get("CRAIG_BENCH_DATABASE_URL")
    root: Path | None = None
    server: EmbeddedPostgres | None = None
    try:
        if not server_url:
            root = Path(tempfile.mkdtemp(prefix="craig-bench-pg-"))
            root.chmod(0o755)
            server = EmbeddedPostgres(root / "pg", fsync="off", synchronous_commit="off", max_connections="300")
            server.start()
            server_url = server.url("postgres")
            EMBEDDED_POSTMASTER[:] = [int((root / "pg" / "postmaster.pid").read_text().split()[0])]
        name = f"bench_{uuid.uuid4().hex[:10]}"
        _admin(server_url, f'CREATE DATABASE "{name}"')
        url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
        try:
            upgrade_to_head(url)
            yield url
        finally:
            _admin(server_url, f'DROP DATABASE "{name}" WITH (FORCE)')
    finally:  # never leave a server running, whatever failed
        EMBEDDED_POSTMASTER.clear()
        if server is not None:
            server.stop()
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)


def postgres_cpu_seconds(postmaster: int) -> float:
    """A PostgreSQL server's CPU time so far: its postmaster's, its live processes', and what its
    exited processes (a backend whose connection closed) left in the postmaster's count (Linux
    ``/proc``)."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # from the state on: ppid is [1]
        except OSError:
            continue  # it ended meanwhile
        if int(stat.parent.name) == postmaster:
            ticks += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        elif int(fields[1]) == postmaster:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _admin(url: str, sql: str) -> None:
    import asyncio

    async def run() -> None:
        conn = await asyncpg.connect(libpq_dsn(url))
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run())


def exit_cleanly_on_sigterm() -> None:
    """A benchmark stopped with SIGTERM (e.g. by `timeout`) still stops the servers it started."""
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))


def rabbit_available() -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", 5672)) == 0


#: Benchmarks encrypt sensitive fields as production does, with a throw-away key made by the first
#: process of a run and inherited by the processes it starts (which read what it wrote).
BENCH_CIPHER = FieldEncryptor.from_setting(
    os.environ.setdefault("CRAIG_BENCH_FIELD_KEY", base64.b64encode(os.urandom(32)).decode())
)
