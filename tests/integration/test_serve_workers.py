"""``craig serve --workers N`` as a real process: several server processes on one port, under a
parent that starts the dependencies once and stops every child on SIGTERM."""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.services import BrokerNames, SeaweedS3, free_port

pytestmark = pytest.mark.integration

CRAIG = str(Path(sys.executable).parent / "craig")


def _environment(data_dir: Path, **variables: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CRAIG_")}
    return {**clean, "CRAIG_DATA_DIR": str(data_dir), "CRAIG_LOG_JSON": "false", **variables}


def _children(pid: int) -> set[int]:
    """The server processes of ``pid``: its children that run a spawned interpreter (not
    multiprocessing's resource tracker)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == pid and "spawn_main" in command:
            found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]


def _production(
    tmp_path: Path, pg_url: str, rabbit_url: str, broker_names: BrokerNames, s3_server: SeaweedS3, s3_bucket: str
) -> dict[str, str]:
    # Deleted after the test: a parent killed outright leaves its broadcast queues behind (the
    # children, stopped cleanly, delete theirs).
    for name in ("dead-letters", "rules-cache.api", *(f"rules-cache.api.retry.{n}" for n in range(1, 6))):
        broker_names.queue(name)
    return _environment(
        tmp_path,
        CRAIG_PROFILE="production",
        CRAIG_DATABASE__URL=pg_url,
        CRAIG_BROKER__URL=rabbit_url,
        CRAIG_BROKER__EVENTS_EXCHANGE=broker_names.events_exchange,
        CRAIG_BROKER__DLX_EXCHANGE=broker_names.dlx_exchange,
        CRAIG_BROKER__QUEUE_PREFIX=broker_names.queue_prefix,
        CRAIG_OBJECT_STORE__ENDPOINT=s3_server.endpoint,
        CRAIG_OBJECT_STORE__ACCESS_KEY=s3_server.access_key,
        CRAIG_OBJECT_STORE__SECRET_KEY=s3_server.secret_key,
        CRAIG_OBJECT_STORE__BUCKET=s3_bucket,
        CRAIG_OBJECT_STORE__SECURE="false",
        CRAIG_AUTH__JWT_SECRET="x" * 40,
        CRAIG_FIELD_ENCRYPTION_KEY=base64.b64encode(os.urandom(32)).decode(),
        # the background workers run in the parent, once
        CRAIG_WORKERS__IN_PROCESS="true",
        CRAIG_INSTANCE_ID="api",
    )


@pytest.mark.parametrize("workers", ["0", "65", "two"])
def test_workers_out_of_range_is_a_usage_error(workers: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [CRAIG, "serve", "--port", "0", "--workers", workers],
        env=_environment(tmp_path, CRAIG_PROFILE="memory"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("craig: Invalid value for '--workers'"), result.stderr
    assert "Traceback" not in result.stderr


def test_the_memory_profile_refuses_several_workers(tmp_path: Path) -> None:
    result = subprocess.run(
        [CRAIG, "serve", "--port", "0", "--workers", "2"],
        env=_environment(tmp_path, CRAIG_PROFILE="memory"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert "--workers above 1 needs the embedded or production profile" in result.stderr
    assert "Traceback" not in result.stderr


def _serve_two_workers(port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``craig serve --workers 2`` in a session of its own (so a failed test can stop the
    children too), its output in ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [CRAIG, "serve", "--port", str(port), "--workers", "2"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def test_two_workers_answer_on_one_port_and_sigterm_stops_them_all(
    tmp_path: Path,
    pg_url: str,
    rabbit_url: str,
    broker_names: BrokerNames,
    s3_server: SeaweedS3,
    s3_bucket: str,
) -> None:
    port = free_port()
    env = _production(tmp_path, pg_url, rabbit_url, broker_names, s3_server, s3_bucket)
    log = tmp_path / "serve.log"
    process = _serve_two_workers(port, env, log)
    children: set[int] = set()
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180  # a bound that only stops a hung test
        while time.monotonic() < deadline:
            assert process.poll() is None, f"craig serve exited with {process.returncode}:\n{log.read_text()}"
            children = _children(process.pid)
            try:
                if len(children) == 2 and httpx.get(f"{base}/health/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        else:
            pytest.fail(f"craig serve --workers 2 never became ready:\n{log.read_text()}")
        # Each child starts on its own, under an instance id of its own (its broadcast queue):
        # wait until both have, then ask many times.
        started = [f"instance=api-{child}" for child in children]
        while not all(line in log.read_text() for line in started) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert all(line in log.read_text() for line in started), log.read_text()
        with httpx.Client(base_url=base, timeout=5) as client:
            answers = [client.get("/health/ready").status_code for _ in range(20)]
        assert answers == [200] * 20
        assert _children(process.pid) == children  # nobody died and was replaced
        text = log.read_text()
        assert "workers started" in text  # the background loops, in the parent only
        assert text.count("workers started") == 1
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, log.read_text()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    deadline = time.monotonic() + 10
    while any(_alive(child) for child in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(child) for child in children), children
    assert "Traceback" not in log.read_text()


def test_the_children_stop_when_the_parent_is_killed(
    tmp_path: Path, pg_url: str, rabbit_url: str, broker_names: BrokerNames, s3_server: SeaweedS3, s3_bucket: str
) -> None:
    """A parent killed outright (SIGKILL, OOM) cannot stop its children: Linux does, on request."""
    port = free_port()
    env = _production(tmp_path, pg_url, rabbit_url, broker_names, s3_server, s3_bucket)
    log = tmp_path / "serve.log"
    process = _serve_two_workers(port, env, log)
    children: set[int] = set()
    try:
        deadline = time.monotonic() + 180  # a bound that only stops a hung test
        while time.monotonic() < deadline:
            assert process.poll() is None, f"craig serve exited with {process.returncode}:\n{log.read_text()}"
            children = _children(process.pid)
            if len(children) == 2 and all(f"instance=api-{child}" in log.read_text() for child in children):
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"craig serve --workers 2 never started both children:\n{log.read_text()}")
        process.kill()
        process.wait()
        deadline = time.monotonic() + 30
        while any(_alive(child) for child in children) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(child) for child in children), log.read_text()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
