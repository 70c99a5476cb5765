"""Craig over real HTTP for benchmarks: a ``craig serve`` subprocess, wrk, and the RSS it used.

:func:`craig_server` migrates the database at a URL, starts ``craig serve`` on it (the embedded
profile's in-process bus and files for attachments, on that PostgreSQL: see
:mod:`bench._craig_process`), waits for ``/health/ready``, and yields a :class:`CraigServer`
(its base URL, its pid, a way to mint tokens). On the way out it sends SIGTERM, waits, and kills
what is still running after a timeout. :func:`run_wrk` loads one URL with wrk and parses
req/s, p50 and p99 from ``--latency``; :class:`RssSampler` keeps the largest resident set of a
process and its children while a load runs.
"""

from __future__ import annotations

import base64
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import attrs

from bench._services import postgres_cpu_seconds
from craig.adapters.postgres.migrations import upgrade_to_head
from craig.domain.access import Role
from craig.entrypoints.settings import AuthSettings
from craig.entrypoints.tokens import mint

ROOT = Path(__file__).resolve().parent.parent
#: One secret and one field key for every server of a run: they share the database.
JWT_SECRET = base64.b64encode(os.urandom(48)).decode()
FIELD_KEY = base64.b64encode(os.urandom(32)).decode()
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def craig_environment(database_url: str, data_dir: Path, **settings: str) -> dict[str, str]:
    """The process environment of a benchmark's Craig: no inherited ``CRAIG_*`` variable (an
    unknown one is refused), then the benchmark's settings (``audit__enabled="false"``...)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("CRAIG_")}
    env.update(
        {
            "CRAIG_PROFILE": "embedded",
            "CRAIG_DATABASE__URL": database_url,
            "CRAIG_DATA_DIR": str(data_dir),
            "CRAIG_AUTH__JWT_SECRET": JWT_SECRET,
            "CRAIG_FIELD_ENCRYPTION_KEY": FIELD_KEY,
            "CRAIG_LOG_LEVEL": "WARNING",
            "PYTHONPATH": str(ROOT),
        }
    )
    env.update({f"CRAIG_{name.upper()}": value for name, value in settings.items()})
    return env


@attrs.frozen
class CraigServer:
    base_url: str
    pid: int
    #: The pids of the other Craig processes of this server (a separate `craig worker`).
    helper_pids: tuple[int, ...] = ()

    def token(self, *, role: Role = Role.CASEWORKER, sub: uuid.UUID | None = None, name: str = "Ann") -> str:
        auth = AuthSettings(jwt_secret=JWT_SECRET)
        return mint(auth, sub=sub or uuid.uuid4(), role=role, name=name, ttl_seconds=7200)


def craig_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "bench._craig_process", *args]


@contextmanager
def craig_server(
    database_url: str,
    *,
    audit: bool = True,
    serve_args: Sequence[str] = (),
    separate_worker: bool = False,
    settings: Mapping[str, str] | None = None,
) -> Iterator[CraigServer]:
    """``craig serve`` on ``database_url`` (migrated here, if it is not yet). ``audit=False``
    sets ``CRAIG_AUDIT__ENABLED=false``; ``serve_args`` go to ``craig serve`` (``--workers N``);
    ``separate_worker`` runs the background workers in a ``craig worker`` process of their own
    instead of in the serve process. ``settings``: more ``section__name`` values."""
    upgrade_to_head(database_url)
    data_dir = Path(tempfile.mkdtemp(prefix="craig-bench-serve-"))
    port = free_port()
    chosen = {
        # only when off: a build without the switch refuses the unknown variable
        **({} if audit else {"audit__enabled": "false"}),
        "workers__in_process": "false" if separate_worker else "true",
        **(settings or {}),
    }
    env = craig_environment(database_url, data_dir, **chosen)
    processes: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    try:
        if separate_worker:
            logs.append(data_dir / "worker.log")
            processes.append(_start(craig_command("worker"), env, logs[-1]))
        logs.append(data_dir / "serve.log")
        serve = _start(craig_command("serve", "--port", str(port), *serve_args), env, logs[-1])
        processes.append(serve)
        base_url = f"http://127.0.0.1:{port}"
        _wait_ready(base_url, processes, logs)
        yield CraigServer(base_url, serve.pid, tuple(p.pid for p in processes if p is not serve))
    finally:
        for process in reversed(processes):
            stop(process)
        shutil.rmtree(data_dir, ignore_errors=True)


def _start(command: list[str], env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(command, env=dict(env), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def _wait_ready(base_url: str, processes: Sequence[subprocess.Popen[bytes]], logs: Sequence[Path]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        for process, log in zip(processes, logs, strict=True):
            if process.poll() is not None:
                raise RuntimeError(f"craig exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base_url}/health/ready", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"craig was not ready within {READY_TIMEOUT:g}s:\n{logs[-1].read_text()[-3000:]}")


def stop(process: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM, wait up to ``timeout``, then SIGKILL."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# --- wrk --------------------------------------------------------------------------------------


def require_wrk() -> str:
    """wrk's path, or exit with how to install it."""
    path = shutil.which("wrk")
    if path is None:
        sys.exit("this benchmark needs wrk: apt-get install -y wrk")
    return path


@attrs.frozen
class WrkResult:
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    requests: int
    #: Responses other than 2xx/3xx, and socket errors (connect, read, write, timeout).
    bad_responses: int
    socket_errors: int
    #: wrk's own CPU use over the run, in percent of one core.
    wrk_cpu_percent: float


def lua_script(
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    body: str | None = None,
    unique_header: str | None = None,
) -> str:
    """A wrk script: ``method``, ``headers``, ``body``; with ``unique_header`` (e.g.
    ``Idempotency-Key``), every request carries a value of its own in that header."""

    def lua(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    lines = [f"wrk.method = {lua(method)}"]
    if body is not None:
        lines.append(f"wrk.body = {lua(body)}")
    for name, value in (headers or {}).items():
        lines.append(f"wrk.headers[{lua(name)}] = {lua(value)}")
    if unique_header:
        run = uuid.uuid4().hex[:8]
        lines += [
            "local threads, counter, prefix = 0, 0, ''",
            "function setup(thread) threads = threads + 1; thread:set('tid', threads) end",
            f"function init(args) prefix = {lua(run)} .. '-' .. tostring(tid) .. '-' end",
            "function request()",
            "  counter = counter + 1",
            f"  wrk.headers[{lua(unique_header)}] = prefix .. counter",
            "  return wrk.format()",
            "end",
        ]
    return "\n".join(lines) + "\n"


_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip()).groups()  # type: ignore[union-attr]
    return float(number) * _UNITS_MS[unit]


def parse_wrk(output: str) -> tuple[float, float, float, int, int, int]:
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", output, re.M).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", output, re.M).group(1))  # type: ignore[union-attr]
    total = int(re.search(r"(\d+) requests in", output).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    socket_errors = sum(int(n) for n in errors.groups()) if errors else 0
    return rps, p50, p99, total, int(bad.group(1)) if bad else 0, socket_errors


def run_wrk(
    url: str,
    *,
    connections: int,
    duration: float,
    threads: int = 2,
    script: str | None = None,
    timeout_seconds: int = 10,
) -> WrkResult:
    """Load ``url`` with wrk (``--latency``); ``script`` is the text of a Lua script."""
    wrk = require_wrk()
    threads = max(1, min(threads, connections))
    command = [
        wrk,
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(duration))}s",
        f"--timeout={timeout_seconds}s",
        "--latency",
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua_file:
        lua_file.write(script or "")
    try:
        if script:
            command += ["-s", lua_file.name]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        done = subprocess.run([*command, url], capture_output=True, text=True, check=False)
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        os.unlink(lua_file.name)
    if done.returncode != 0 or "Requests/sec" not in done.stdout:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stdout}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rps, p50, p99, total, bad, socket_errors = parse_wrk(done.stdout)
    return WrkResult(rps, p50, p99, total, bad, socket_errors, 100.0 * cpu / wall)


# --- resident memory ----------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
            found += [int(child) for child in text.split()]
    except OSError:
        pass
    return found


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _tree(pids: Sequence[int]) -> set[int]:
    seen: set[int] = set()
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo += _children(pid)
    return seen


def tree_cpu_seconds(pids: Sequence[int]) -> float:
    """CPU time used so far by ``pids`` and their live descendants."""
    return sum(_cpu_seconds(pid) for pid in _tree(pids))


def tree_rss_kib(pids: Sequence[int]) -> int:
    """The resident set of ``pids`` and all their descendants (e.g. ``--workers`` processes)."""
    seen: set[int] = set()
    todo = list(pids)
    total = 0
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _rss_kib(pid)
        todo += _children(pid)
    return total


def machine_busy_seconds() -> float:
    """CPU time the whole machine has spent working, summed over its cores: user, nice, system,
    irq and softirq, not idling, waiting for I/O or stolen by the hypervisor (Linux ``/proc/stat``;
    guest time is in user)."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (fields[0] + fields[1] + fields[2] + fields[5] + fields[6]) / os.sysconf("SC_CLK_TCK")


class RssSampler:
    """The largest resident set of ``pids`` with their children, sampled while the block runs,
    and the CPU they used meanwhile (:attr:`cpu_percent`, of one core); with ``postmaster`` (the
    PostgreSQL server's), the server's CPU too (:attr:`database_cpu_percent`), and the whole
    machine's (:attr:`machine_cpu_percent`, of one core: 200 is two cores busy)."""

    def __init__(self, pids: Sequence[int], interval: float = 0.1, postmaster: int | None = None) -> None:
        self.pids = list(pids)
        self.postmaster = postmaster
        self.interval = interval
        self.max_kib = 0
        self.cpu_percent = 0.0
        self.database_cpu_percent = 0.0
        self.machine_cpu_percent = 0.0
        self._cpu = 0.0
        self._database_cpu = 0.0
        self._machine_cpu = 0.0
        self._started = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.max_kib = max(self.max_kib, tree_rss_kib(self.pids))
            self._stop.wait(self.interval)

    def __enter__(self) -> RssSampler:
        self._cpu = tree_cpu_seconds(self.pids)
        self._database_cpu = self._database_seconds()
        self._machine_cpu = machine_busy_seconds()
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        wall = time.monotonic() - self._started
        if wall:
            self.cpu_percent = 100.0 * (tree_cpu_seconds(self.pids) - self._cpu) / wall
            self.database_cpu_percent = 100.0 * (self._database_seconds() - self._database_cpu) / wall
            self.machine_cpu_percent = 100.0 * (machine_busy_seconds() - self._machine_cpu) / wall

    def _database_seconds(self) -> float:
        return 0.0 if self.postmaster is None else postgres_cpu_seconds(self.postmaster)

    @property
    def max_mib(self) -> float:
        return self.max_kib / 1024
