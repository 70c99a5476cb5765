"""`craig serve` as an operator runs it: embedded profile, fresh data dir, real HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.support.apps import free_port
from tests.support.logs import wait_for_line

pytestmark = pytest.mark.e2e

CRAIG = str(Path(sys.executable).parent / "craig")


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAIG_")}
    env.update({"CRAIG_DATA_DIR": str(data_dir), "CRAIG_LOG_JSON": "false"})
    return env


def _wait_ready(base: str, process: subprocess.Popen[bytes], log: Path) -> httpx.Response:
    deadline = time.monotonic() + 90
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


def serve(data_dir: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """``craig serve`` on the embedded profile in ``data_dir``, its output in ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [CRAIG, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=_env(data_dir),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def mint_token(data_dir: Path, sub: uuid.UUID) -> str:
    """A case worker's token from ``craig token`` (Ann Example), signed with the server's secret."""
    minted = subprocess.run(
        [CRAIG, "token", "--sub", str(sub), "--role", "caseworker", "--name", "Ann Example"],
        env=_env(data_dir),
        capture_output=True,
        text=True,
        check=True,
    )
    return minted.stdout.strip()


def test_serve_embedded_then_mint_a_token_and_call_v1(tmp_path: Path) -> None:
    data_dir = tmp_path / "craig-data"
    port = free_port()
    log = tmp_path / "serve.log"
    process = serve(data_dir, port, log)
    base = f"http://127.0.0.1:{port}"
    try:
        ready = _wait_ready(base, process, log)
        assert ready.json()["dependencies"]["database"]["status"] == "up"
        assert ready.headers["strict-transport-security"] == "max-age=31536000; includeSubDomains"

        secret = data_dir / "secrets" / "jwt_secret"
        assert secret.stat().st_mode & 0o777 == 0o600

        sub = uuid.uuid4()
        token = mint_token(data_dir, sub)
        me = httpx.get(f"{base}/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert me.status_code == 200
        assert me.json() == {"sub": str(sub), "name": "Ann Example", "role": "caseworker"}

        anonymous = httpx.get(f"{base}/v1/me", timeout=10)
        assert anonymous.status_code == 401
        assert anonymous.headers["content-type"] == "application/problem+json"

        status = subprocess.run(
            [CRAIG, "status"], env=_env(data_dir), capture_output=True, text=True, check=True, timeout=120
        )
        assert "[outbox]" in status.stdout
        # `craig status` reused the server that `craig serve` owns, and left it running.
        assert httpx.get(f"{base}/health/ready", timeout=5).status_code == 200

        openapi = httpx.get(f"{base}/api-doc/openapi.json", timeout=10)
        assert openapi.status_code == 200 and "/v1/me" in openapi.json()["paths"]
        swagger = httpx.get(f"{base}/swagger-ui", timeout=10)
        assert "swagger-ui-bundle.js" in swagger.text and "//cdn" not in swagger.text
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0, log.read_text()  # a graceful shutdown
    assert "workers stopped" in log.read_text()
    # The server stopped its embedded PostgreSQL on the way out.
    assert not (data_dir / "pg" / "postmaster.pid").exists()


def test_a_second_ctrl_c_closes_connections_but_still_stops_the_workers_in_order(tmp_path: Path) -> None:
    """uvicorn's force quit (Ctrl-C while it waits for a request in flight) skipped the app's
    shutdown: the embedded PostgreSQL was stopped under the background loops, with a traceback."""
    data_dir = tmp_path / "craig-data"
    port = free_port()
    log = tmp_path / "serve.log"
    process = serve(data_dir, port, log)
    try:
        _wait_ready(f"http://127.0.0.1:{port}", process, log)
        token = mint_token(data_dir, uuid.uuid4())
        # A request in flight: its body never ends, so the first Ctrl-C waits for it.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            client.sendall(
                b"POST /v1/cases HTTP/1.1\r\nHost: craig\r\nContent-Type: application/json\r\n"
                + f"Authorization: Bearer {token}\r\nContent-Length: 1000\r\n\r\n".encode()
                + b'{"family_name": '
            )
            time.sleep(0.5)  # the handler is waiting for the rest of the body
            process.send_signal(signal.SIGINT)
            wait_for_line(process, log, "Waiting for connections to close")
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    text = log.read_text()
    assert process.returncode == 0, text
    assert "forced to quit" in text and "workers stopped" in text, text
    assert "Traceback" not in text, text
    assert not (data_dir / "pg" / "postmaster.pid").exists()
