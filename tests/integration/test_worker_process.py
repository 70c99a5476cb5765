"""``craig worker`` as an operator runs it (a real process, production profile, real PostgreSQL,
RabbitMQ and S3): its own ``/health/live``, ``/health/ready`` and ``/metrics`` on
CRAIG_WORKERS__METRICS_PORT, the loops named with their last pass's age."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from craig.domain.constants import INBOX_MAX_RETRIES
from tests.support.services import BrokerNames, SeaweedS3, free_port

pytestmark = [pytest.mark.integration, pytest.mark.rabbit, pytest.mark.s3]

CRAIG = str(Path(sys.executable).parent / "craig")
LOOPS = {"cleanup", "outbox-relay", "attachment-scanner", "send-jobs", "audit-sealer"}
#: A metric of each part of the worker: relay, consumers, scanner, send jobs, cleanup and the loops.
WORKER_METRICS = (
    "craig_outbox_published_total",
    "craig_outbox_batch_duration_seconds",
    "craig_inbox_retries_total",
    "craig_inbox_dead_lettered_total",
    "craig_attachment_scan_outcomes_total",
    "craig_attachment_orphans_removed_total",
    "craig_exchange_dispatches_total",
    "craig_exchange_dispatch_duration_seconds",
    "craig_worker_loop_passes_total",
    "craig_worker_loop_pass_duration_seconds",
    "craig_worker_loop_last_pass_timestamp_seconds",
    "craig_worker_ready",
    "craig_build_info",
)


def test_the_worker_serves_its_probes_and_metrics(
    tmp_path: Path, pg_url: str, rabbit_url: str, broker_names: BrokerNames, s3_server: SeaweedS3, s3_bucket: str
) -> None:
    instance = "w-probe"
    broker_names.queue("dead-letters")
    broker_names.queue(f"rules-cache.{instance}")
    for level in range(1, INBOX_MAX_RETRIES + 1):
        broker_names.queue(f"rules-cache.{instance}.retry.{level}")
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CRAIG_")},
        "CRAIG_PROFILE": "production",
        "CRAIG_DATA_DIR": str(tmp_path),
        "CRAIG_INSTANCE_ID": instance,
        "CRAIG_DATABASE__URL": pg_url,
        "CRAIG_BROKER__URL": rabbit_url,
        "CRAIG_BROKER__EVENTS_EXCHANGE": broker_names.events_exchange,
        "CRAIG_BROKER__DLX_EXCHANGE": broker_names.dlx_exchange,
        "CRAIG_BROKER__QUEUE_PREFIX": broker_names.queue_prefix,
        "CRAIG_OBJECT_STORE__ENDPOINT": s3_server.endpoint,
        "CRAIG_OBJECT_STORE__ACCESS_KEY": s3_server.access_key,
        "CRAIG_OBJECT_STORE__SECRET_KEY": s3_server.secret_key,
        "CRAIG_OBJECT_STORE__BUCKET": s3_bucket,
        "CRAIG_OBJECT_STORE__SECURE": "false",
        "CRAIG_AUTH__JWT_SECRET": "x" * 40,
        "CRAIG_FIELD_ENCRYPTION_KEY": base64.b64encode(os.urandom(32)).decode(),
        "CRAIG_LOG_JSON": "false",
        "CRAIG_WORKERS__METRICS_PORT": str(port),
    }
    log = tmp_path / "worker.log"
    base = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen([CRAIG, "worker"], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        ready = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and process.poll() is None:
            try:
                ready = httpx.get(f"{base}/health/ready", timeout=5)
                if ready.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        assert ready is not None and ready.status_code == 200, log.read_text()
        body = ready.json()
        assert body["status"] == "ready" and body["consumers"] == {"status": "ok"}
        assert set(body["loops"]) == LOOPS
        for name, loop in body["loops"].items():
            assert loop["status"] == "ok", (name, loop)
            assert loop["limit_seconds"] > 0
            assert loop["last_pass_age_seconds"] is None or 0 <= loop["last_pass_age_seconds"] <= loop["limit_seconds"]

        assert httpx.get(f"{base}/health/live", timeout=5).json() == {"status": "ok"}
        scraped = httpx.get(f"{base}/metrics", timeout=5)
        assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
        text = scraped.text
        for name in WORKER_METRICS:
            assert f"# TYPE {name} " in text, name
        for loop_name in LOOPS:
            assert f'craig_worker_loop_passes_total{{loop="{loop_name}",outcome="ok"}}' in text, loop_name
        assert "craig_worker_ready 1.0" in text
        assert "process_resident_memory_bytes" in text
        # The shared backlog gauges are the API's: a worker does not report them.
        assert "craig_outbox_pending" not in text
        assert httpx.get(f"{base}/nothing", timeout=5).status_code == 404
        assert httpx.post(f"{base}/metrics", timeout=5).status_code == 405

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "Traceback" not in log.read_text()


def test_a_taken_metrics_port_is_refused_in_one_line(tmp_path: Path) -> None:
    import socket

    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CRAIG_")},
        "CRAIG_PROFILE": "memory",
        "CRAIG_DATA_DIR": str(tmp_path),
        "CRAIG_LOG_JSON": "false",
    }
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [CRAIG, "worker"],
            env={**env, "CRAIG_WORKERS__METRICS_PORT": str(port)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("craig:")]
    assert lines == [
        f"craig: cannot listen on 127.0.0.1:{port}: Address already in use; "
        "choose another CRAIG_WORKERS__METRICS_PORT (0: none) or stop what listens there"
    ]
