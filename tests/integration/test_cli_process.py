"""The ``craig`` command as an operator runs it, as a real process: closed pipes, the JSON
status, the effective settings, the progress mode chosen by what stderr is, and dependencies
that cannot be reached."""

from __future__ import annotations

import base64
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.services import BrokerNames, free_port

pytestmark = pytest.mark.integration

CRAIG = str(Path(sys.executable).parent / "craig")
STATUS_KEYS = {
    "craig": {"profile", "data_dir", "version"},
    "dependencies": {"database", "object_store"},
    "idempotency": {"slots_by_status", "oldest_processing_age_seconds"},
    "outbox": {"pending", "failing", "oldest_pending_age_seconds"},
    "inbox": {"retrying", "dead_lettered", "awaiting_replay"},
    "unrouted_events": {"count", "location"},
    "attachments": {"tables", "scanner"},
    "placements": {"foster_homes", "homes_at_capacity", "full_homes", "homes_with_occupancy_drift"},
    "send_jobs": {"jobs_by_status", "oldest_due_age_seconds", "oldest_expired_lease_age_seconds"},
    "intake_queue": {"by_priority", "unscreened", "overdue"},
}


def environment(data_dir: Path, **variables: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CRAIG_")}
    return {**clean, "CRAIG_PROFILE": "memory", "CRAIG_DATA_DIR": str(data_dir), **variables}


def craig(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CRAIG, *args], env=env, capture_output=True, text=True, timeout=120)


def production(tmp_path: Path, database_url: str) -> dict[str, str]:
    return environment(
        tmp_path,
        CRAIG_PROFILE="production",
        CRAIG_DATABASE__URL=database_url,
        CRAIG_BROKER__URL=f"amqp://guest:guest@127.0.0.1:{free_port()}/",
        CRAIG_OBJECT_STORE__ENDPOINT=f"127.0.0.1:{free_port()}",
        CRAIG_OBJECT_STORE__ACCESS_KEY="craig",
        CRAIG_OBJECT_STORE__SECRET_KEY="secret",
        CRAIG_AUTH__JWT_SECRET="x" * 40,
        CRAIG_FIELD_ENCRYPTION_KEY=base64.b64encode(os.urandom(32)).decode(),
        CRAIG_LOG_JSON="false",
    )


@pytest.mark.parametrize("args", [["config"], ["config", "--effective"], ["status"], ["status", "--json"], ["--help"]])
def test_a_closed_pipe_ends_quietly(args: list[str], tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # nobody will read: the first write finds the pipe closed, like `| head -1` that left
    try:
        process = subprocess.run(
            [CRAIG, *args], env=environment(tmp_path), stdout=write, stderr=subprocess.PIPE, text=True, timeout=120
        )
    finally:
        os.close(write)
    assert "Traceback" not in process.stderr and "Exception ignored" not in process.stderr, process.stderr
    assert "BrokenPipe" not in process.stderr and "craig:" not in process.stderr, process.stderr
    assert process.returncode == 141


def test_status_json_has_the_documented_keys(tmp_path: Path) -> None:
    result = craig("status", "--json", env=environment(tmp_path))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert {section: set(values) for section, values in report.items()} == STATUS_KEYS
    assert report["craig"]["profile"] == "memory"
    assert report["dependencies"] == {"database": "up", "object_store": "up"}
    assert report["outbox"] == {"pending": 0, "failing": 0, "oldest_pending_age_seconds": None}
    assert set(report["send_jobs"]["jobs_by_status"]) == {"pending", "in_flight", "sent", "failed"}
    assert report["attachments"]["tables"]["contact_attachments"] == {
        "pending": 0,
        "oldest_pending_age_seconds": None,
        "failed": 0,
    }
    assert report["attachments"]["scanner"] == {"grace_seconds": 3600, "interval_seconds": 300}
    assert set(report["intake_queue"]["by_priority"]) == {"urgent", "high", "medium", "low", "unscored"}
    assert report["intake_queue"]["by_priority"]["urgent"] == {
        "unscreened": 0,
        "overdue": 0,
        "oldest_age_seconds": None,
    }
    table = craig("status", env=environment(tmp_path))
    assert table.returncode == 0 and table.stdout.startswith("[craig]\n") and "[send jobs]" in table.stdout


def test_config_effective_shows_each_value_its_source_and_no_secret(tmp_path: Path) -> None:
    broker_url = tmp_path / "broker-url"
    broker_url.write_text("amqp://craig:hunter2@127.0.0.1:5672/craig\n")
    env = environment(
        tmp_path / "data", CRAIG_HTTP__PORT="9001", CRAIG_BROKER__URL_FILE=str(broker_url), CRAIG_LOG_JSON="false"
    )
    result = craig("config", "--effective", env=env)
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split(maxsplit=2)[1:] for line in result.stdout.splitlines()}
    assert rows["CRAIG_HTTP__PORT"] == ["'9001'", "environment"]
    assert rows["CRAIG_HTTP__HOST"] == ["'127.0.0.1'", "default"]
    assert rows["CRAIG_BROKER__URL"] == ["'****'", f"file {broker_url}"]
    assert rows["CRAIG_AUTH__JWT_SECRET"] == ["'****'", f"file {tmp_path / 'data' / 'secrets' / 'jwt_secret'}"]
    assert "hunter2" not in result.stdout
    generated = (tmp_path / "data" / "secrets" / "jwt_secret").read_text().strip()
    assert generated not in result.stdout
    reference = craig("config", env=env)  # without the flag: the reference, as before
    assert reference.returncode == 0 and "'9001'" not in reference.stdout and "'8000'" in reference.stdout


def _stderr_on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    master, slave = os.openpty()
    process = subprocess.Popen([CRAIG, *args], env=env, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            process.kill()
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the process closed its side
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return process.wait(timeout=60), b"".join(chunks).decode()


def test_dlx_replay_draws_a_bar_on_a_terminal_and_lines_on_a_pipe(tmp_path: Path) -> None:
    env = environment(tmp_path, CRAIG_LOG_JSON="false")
    code, terminal = _stderr_on_a_terminal(["dlx", "replay", "--all"], env)
    assert code == 0, terminal
    assert "\rdead letters replayed" in terminal and "100% 0/0\x1b[K" in terminal
    piped = craig("dlx", "replay", "--all", env=env)
    assert piped.returncode == 0 and piped.stdout == "0 replayed\n"
    (line,) = [line for line in piped.stderr.splitlines() if "dead letters replayed" in line]
    assert line.startswith("dead letters replayed") and line.endswith("100% 0/0")
    assert "\r" not in piped.stderr and "\x1b" not in piped.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["status"],
        ["dlx", "replay", "--all"],
        ["db", "upgrade"],
        ["keys", "rotate"],
        ["serve", "--port", "0"],
        ["worker"],
    ],
)
def test_an_unreachable_database_is_one_line_and_exit_2(args: list[str], tmp_path: Path) -> None:
    result = craig(*args, env=production(tmp_path, f"postgresql://postgres@127.0.0.1:{free_port()}/craig"))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("20")]  # log lines carry a time
    assert len(lines) == 1 and lines[0].startswith("craig: cannot reach PostgreSQL"), result.stderr
    assert "check CRAIG_DATABASE__URL" in lines[0]


def test_status_says_which_dependency_is_down_and_reports_the_rest(tmp_path: Path, pg_url: str) -> None:
    """Only the database must answer: RabbitMQ and S3 are down here (nothing listens)."""
    result = craig("status", "--json", env=production(tmp_path, pg_url))
    # The report prints whole, and says it is not: exit 1 and one line on stderr.
    assert result.returncode == 1, result.stderr
    assert (
        "craig: the report is not whole: broker down, object_store down, inbox not read, unrouted events not read"
        in (result.stderr)
    )
    report = json.loads(result.stdout)
    dependencies = report["dependencies"]
    assert set(dependencies) == {"database", "broker", "object_store"}
    assert dependencies["database"] == "up"
    assert dependencies["broker"].startswith("down: ") and "RabbitMQ" in dependencies["broker"]
    assert dependencies["object_store"].startswith("down: ")
    assert report["outbox"] == {"pending": 0, "failing": 0, "oldest_pending_age_seconds": None}
    assert set(report["send_jobs"]["jobs_by_status"]) == {"pending", "in_flight", "sent", "failed"}
    assert set(report["unrouted_events"]) == {"error"}  # they are kept in RabbitMQ
    assert "Traceback" not in result.stderr


def test_db_upgrade_and_keys_rotate_reach_only_the_database(tmp_path: Path, pg_url: str) -> None:
    """RabbitMQ and S3 are down here (nothing listens): neither command needs them."""
    env = production(tmp_path, pg_url)
    upgraded = craig("db", "upgrade", env=env)
    assert upgraded.returncode == 0, upgraded.stderr
    assert upgraded.stdout == "database at revision head\n"
    rotated = craig("keys", "rotate", env=env)
    assert rotated.returncode == 0, rotated.stderr
    assert "done: every value is under the newest key" in rotated.stdout


def test_dlx_list_reaches_only_the_broker(tmp_path: Path, rabbit_url: str, broker_names: BrokerNames) -> None:
    """In production the dead letters are in RabbitMQ: listing them works while PostgreSQL is down."""
    broker_names.queue("dead-letters")
    env = {
        **production(tmp_path, f"postgresql://postgres@127.0.0.1:{free_port()}/craig"),
        "CRAIG_BROKER__URL": rabbit_url,
        "CRAIG_BROKER__EVENTS_EXCHANGE": broker_names.events_exchange,
        "CRAIG_BROKER__DLX_EXCHANGE": broker_names.dlx_exchange,
        "CRAIG_BROKER__QUEUE_PREFIX": broker_names.queue_prefix,
    }
    result = craig("dlx", "list", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "0 dead letters\n"
    replay = craig("dlx", "replay", "--all", env=env)  # replaying gives each letter a fresh budget: the database
    assert replay.returncode == 2 and "craig: cannot reach PostgreSQL" in replay.stderr


def test_an_unknown_revision_is_one_line_and_exit_2(tmp_path: Path, pg_url: str) -> None:
    result = craig("db", "upgrade", "nosuchrevision", env=production(tmp_path, pg_url))
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("craig:")]
    assert lines == ["craig: cannot upgrade to 'nosuchrevision': Can't locate revision identified by 'nosuchrevision'"]
    assert "Traceback" not in result.stderr


def test_serve_refuses_an_address_it_cannot_bind_before_starting_anything(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = craig("serve", "--port", str(port), env=environment(tmp_path, CRAIG_LOG_JSON="false"))
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("craig:")]
    assert lines == [
        f"craig: cannot listen on 127.0.0.1:{port}: Address already in use; "
        "choose another --port (CRAIG_HTTP__PORT) or stop what listens there"
    ]
    not_here = craig("serve", "--host", "192.0.2.1", "--port", "0", env=environment(tmp_path))  # TEST-NET-1
    assert (
        not_here.returncode == 2 and "craig: cannot listen on 192.0.2.1:0: Cannot assign requested" in not_here.stderr
    )
    assert "Traceback" not in result.stderr + not_here.stderr


def test_worker_stops_gracefully_on_sigterm(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [CRAIG, "worker"],
            env=environment(tmp_path, CRAIG_LOG_JSON="false", CRAIG_WORKERS__METRICS_PORT="0"),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 90
        while "worker running" not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "worker running" in log.read_text(), log.read_text()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "Traceback" not in log.read_text()
