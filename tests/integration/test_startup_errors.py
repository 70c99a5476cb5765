"""Startup refuses with one line that names the setting or the dependency, and how to fix it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import attrs
import httpx
import pytest
from dependency_injector import providers

from craig.adapters.memory.object_store import MemoryObjectStore
from craig.adapters.postgres import migrations
from craig.entrypoints.container import build_container
from craig.entrypoints.runtime import StartupError, running
from craig.entrypoints.settings import BrokerSettings, DatabaseSettings, Profile
from tests.support.apps import make_container, make_settings
from tests.support.services import free_port, scratch_database

pytestmark = pytest.mark.integration

CRAIG = str(Path(sys.executable).parent / "craig")


def _without_craig_settings() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CRAIG_")}


def _craig(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CRAIG, *args], env={**_without_craig_settings(), **env}, capture_output=True, text=True, timeout=60
    )


async def _stopped_by_sigterm(
    args: list[str], env: dict[str, str], ready: Callable[[], Awaitable[bool]], *, guard_seconds: float
) -> tuple[int | None, str]:
    """``craig ARGS`` sent SIGTERM once ``ready()``: its exit code and output. The guard keeps a
    process that does not stop from hanging the suite; it is not a measurement."""
    process = await asyncio.create_subprocess_exec(
        CRAIG,
        *args,
        env={**_without_craig_settings(), **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        while process.returncode is None and not await ready():
            await asyncio.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        out, _ = await asyncio.wait_for(process.communicate(), timeout=guard_seconds)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    return process.returncode, out.decode()


def test_production_without_its_dependencies_refuses_in_one_line(tmp_path: Path) -> None:
    result = _craig("serve", CRAIG_PROFILE="production", CRAIG_DATA_DIR=str(tmp_path))
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("craig:")]
    assert len(lines) == 1 and "CRAIG_DATABASE__URL" in lines[0] and "CRAIG_BROKER__URL" in lines[0]


def test_a_misspelt_setting_is_named_with_a_suggestion(tmp_path: Path) -> None:
    result = _craig("status", CRAIG_DATABASE_URL="postgresql://x", CRAIG_DATA_DIR=str(tmp_path))
    assert result.returncode == 2
    assert "CRAIG_DATABASE_URL is not a Craig setting; did you mean CRAIG_DATABASE__URL?" in result.stderr


async def test_an_unreachable_database_is_named(tmp_path: Path) -> None:
    settings = make_settings("postgres", tmp_path, f"postgresql://postgres@127.0.0.1:{free_port()}/craig")
    with pytest.raises(StartupError, match=r"cannot reach PostgreSQL.*CRAIG_DATABASE__URL"):
        async with running(make_container(settings)):
            pass


async def test_an_unreachable_broker_is_named(tmp_path: Path, pg_url: str) -> None:
    """Where the broker is needed (``craig worker``, the CLI tools): refused, naming it. ``craig
    serve`` tolerates it instead (below)."""
    settings = attrs.evolve(
        make_settings("postgres", tmp_path, pg_url),
        profile=Profile.PRODUCTION,
        database=DatabaseSettings(url=pg_url),
        broker=BrokerSettings(url=f"amqp://guest:guest@127.0.0.1:{free_port()}/"),
    )
    container = build_container(settings)  # the real production adapter set
    container.object_store.override(providers.Singleton(MemoryObjectStore))  # only the broker is missing
    with pytest.raises(StartupError, match=r"RabbitMQ.*CRAIG_BROKER__URL"):
        async with running(container):
            pass


async def test_production_refuses_an_unmigrated_database_and_names_the_revision(
    tmp_path: Path, pg_server_url: str
) -> None:
    with scratch_database(pg_server_url) as url:
        settings = attrs.evolve(
            make_settings("postgres", tmp_path, url),
            profile=Profile.PRODUCTION,
            database=DatabaseSettings(url=url),
            broker=BrokerSettings(url=f"amqp://guest:guest@127.0.0.1:{free_port()}/"),
        )
        container = build_container(settings)
        message = (
            rf"schema is at revision none but this Craig needs {migrations.head_revision()}; run `craig db upgrade`"
        )
        with pytest.raises(StartupError, match=message):
            async with running(container):
                pass
        await container.postgres().dispose()


def _production_env(tmp_path: Path, database_url: str, **overrides: str) -> dict[str, str]:
    return {
        "CRAIG_PROFILE": "production",
        "CRAIG_DATA_DIR": str(tmp_path),
        "CRAIG_DATABASE__URL": database_url,
        "CRAIG_BROKER__URL": f"amqp://guest:guest@127.0.0.1:{free_port()}/",  # nothing listens
        "CRAIG_OBJECT_STORE__ENDPOINT": f"127.0.0.1:{free_port()}",  # nothing listens
        "CRAIG_OBJECT_STORE__ACCESS_KEY": "craig",
        "CRAIG_OBJECT_STORE__SECRET_KEY": "secret",
        "CRAIG_OBJECT_STORE__SECURE": "false",
        "CRAIG_AUTH__JWT_SECRET": "x" * 40,
        "CRAIG_FIELD_ENCRYPTION_KEY": base64.b64encode(os.urandom(32)).decode(),
        "CRAIG_LOG_JSON": "false",
        **overrides,
    }


def test_production_serve_starts_degraded_without_the_broker_and_the_object_store(tmp_path: Path, pg_url: str) -> None:
    """The outbox is there so that the API does not need RabbitMQ: it starts, warns, and its
    readiness says ``degraded`` (200); /metrics is on its own port when CRAIG_HTTP__METRICS_PORT is set."""
    port, metrics_port = free_port(), free_port()
    env = _production_env(tmp_path, pg_url, CRAIG_HTTP__METRICS_PORT=str(metrics_port))
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [CRAIG, "serve", "--port", str(port)],
            env={**_without_craig_settings(), **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        ready = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and process.poll() is None:
            with contextlib.suppress(httpx.HTTPError):
                ready = httpx.get(f"http://127.0.0.1:{port}/health/ready", timeout=5)
                break
            time.sleep(0.2)
        assert ready is not None, log.read_text()
        assert ready.status_code == 200, ready.text
        body = ready.json()
        assert body["status"] == "degraded"
        assert body["dependencies"]["database"] == {"status": "up"}
        assert body["dependencies"]["broker"]["status"] == "degraded"
        assert body["dependencies"]["object_store"]["status"] == "degraded"
        assert httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).status_code == 404
        scraped = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10)
        assert scraped.status_code == 200 and "craig_build_info" in scraped.text
        assert "craig_outbox_pending 0.0" in scraped.text  # the shared gauges: read from the database
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = log.read_text()
    assert "dependency degraded" in text and "broker" in text and "object_store" in text
    assert "Traceback" not in text


def test_production_serve_still_refuses_broker_credentials_the_broker_refuses(
    tmp_path: Path, pg_url: str, rabbit_url: str
) -> None:
    wrong = rabbit_url.replace("guest:guest@", "guest:not-the-password@")
    result = _craig("serve", "--port", str(free_port()), **_production_env(tmp_path, pg_url, CRAIG_BROKER__URL=wrong))
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("craig:")]
    assert len(lines) == 1 and "ACCESS_REFUSED" in lines[0] and "CRAIG_BROKER__URL" in lines[0], result.stderr


@pytest.mark.parametrize(
    ("command", "stopped"),
    [
        (["worker"], "worker stopped while starting"),
        (["serve", "--port", "0"], "stopped while starting"),
        (["serve", "--port", "0", "--workers", "2"], "stopped while starting"),
    ],
)
async def test_a_process_told_to_stop_while_a_silent_database_holds_its_start_stops_at_once(
    tmp_path: Path, command: list[str], stopped: str
) -> None:
    """A database that accepts connections and never answers holds a start for the pool's
    acquire timeout (30 s). SIGTERM then only set a flag the worker read once it had started
    (it exited 2 after the timeout), and killed ``craig serve`` where it stood (143), leaving
    whatever the start had opened, an embedded PostgreSQL included. Now the start is cancelled
    and unwinds what it opened: nothing is in hand, exit 0."""
    from tests.support.silent_servers import tcp_server

    async with tcp_server() as silent:
        env = _production_env(
            tmp_path, f"postgresql://postgres@127.0.0.1:{silent.port}/craig", CRAIG_WORKERS__METRICS_PORT="0"
        )

        async def waiting_on_the_database() -> bool:
            return bool(silent.accepted)

        # The guard: it stops in well under a second.
        returncode, text = await _stopped_by_sigterm(command, env, waiting_on_the_database, guard_seconds=25)
    assert returncode == 0, text
    assert stopped in text and "Traceback" not in text


def test_a_password_given_in_the_database_urls_query_is_never_printed(tmp_path: Path) -> None:
    """libpq and asyncpg take ``?password=`` as well as the user part; the start's one-line
    refusal printed the URL with only the user part's password masked."""
    url = f"postgresql://postgres:in-userinfo@127.0.0.1:{free_port()}/craig?password=in-query&sslpassword=in-ssl"
    result = _craig("serve", "--port", str(free_port()), **_production_env(tmp_path, url))
    assert result.returncode != 0 and "cannot reach PostgreSQL" in result.stderr, result.stderr
    for secret in ("in-userinfo", "in-query", "in-ssl"):
        assert secret not in result.stdout + result.stderr
    assert "password=masked" in result.stderr and "sslpassword=masked" in result.stderr


async def test_serve_stops_on_sigterm_while_a_silent_broker_holds_its_connect(tmp_path: Path, pg_url: str) -> None:
    """The API starts degraded without RabbitMQ and keeps trying to connect in the background.
    With a broker that accepts and never answers, a SIGTERM cancelled that connect inside
    aio-pika, whose robust connection caught the cancel and started a reconnect loop that
    swallowed every later one: the process never exited (an orchestrator's SIGKILL ended it)."""
    from tests.support.silent_servers import tcp_server

    async with tcp_server() as silent, httpx.AsyncClient() as client:
        port = free_port()
        env = _production_env(tmp_path, pg_url, CRAIG_BROKER__URL=f"amqp://guest:guest@127.0.0.1:{silent.port}/")

        async def serving_with_a_connect_in_flight() -> bool:
            with contextlib.suppress(httpx.HTTPError):
                live = await client.get(f"http://127.0.0.1:{port}/health/live", timeout=2)
                return live.status_code == 200 and bool(silent.accepted)
            return False

        # The guard: the stop waits at most for the connect attempt's timeout (10 s).
        returncode, text = await _stopped_by_sigterm(
            ["serve", "--port", str(port)], env, serving_with_a_connect_in_flight, guard_seconds=60
        )
    assert returncode == 0, text
    assert "Traceback" not in text
