"""A server killed (SIGKILL) in the middle of an idempotent request leaves its slot
``processing``; the slot is claimed again once its TTL has passed, and not before."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from craig.adapters.postgres.database import PostgresDatabase
from craig.domain.access import Role
from craig.entrypoints.settings import AuthSettings
from craig.entrypoints.tokens import mint
from tests.support.apps import JWT_SECRET, free_port
from tests.support.problems import problem_code

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

CLAIM_TTL = 6.0
WAIT_CEILING = 0.2


def _start(pg_url: str, data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    data_dir.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.probe_server", pg_url, str(port), str(CLAIM_TTL), str(WAIT_CEILING)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "CRAIG_DATA_DIR": str(data_dir)},
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{base}/health/ready", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    process.kill()
    raise AssertionError("the probe server did not start")


async def _effects(pg_url: str, name: str) -> int:
    database = PostgresDatabase(pg_url)
    try:
        async with database.connect() as conn:
            query = text("SELECT count(*) FROM event_outbox WHERE aggregate_type = 'probe' AND aggregate_id = :n")
            return int((await conn.execute(query, {"n": name})).scalar_one())
    finally:
        await database.dispose()


async def test_slot_of_a_killed_server_is_recovered_after_its_ttl_and_not_before(pg_url: str, tmp_path: Path) -> None:
    token = mint(
        AuthSettings(jwt_secret=JWT_SECRET), sub=uuid.uuid4(), role=Role.CASEWORKER, name="Ann", ttl_seconds=600
    )
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": uuid.uuid4().hex}
    name, body = uuid.uuid4().hex, {"a": 1}
    url = f"/v1/probe/{name}"
    # Both servers start before the request, so a slow start on a loaded machine cannot eat
    # into the claim's TTL (the early request must land while the dead owner's claim is live).
    first, first_base = _start(pg_url, tmp_path / "first")
    second: subprocess.Popen[bytes] | None = None
    try:
        second, base = _start(pg_url, tmp_path / "second")
        async with httpx.AsyncClient(timeout=120) as client:
            # The handler is still running (X-Probe-Sleep is not part of the fingerprint) when
            # its server is killed: the claim stays `processing`, its effects uncommitted.
            doomed = asyncio.create_task(
                client.post(f"{first_base}{url}", json=body, headers={**headers, "X-Probe-Sleep": "60"})
            )
            await asyncio.sleep(1.0)
            first.send_signal(signal.SIGKILL)
            first.wait()
            killed_at = time.monotonic()
            with pytest.raises(httpx.HTTPError):
                await doomed

            sent_early_at = time.monotonic() - killed_at
            early = await client.post(f"{base}{url}", json=body, headers=headers)
            # The claim was taken ~1 s before the kill, so it is live until ~CLAIM_TTL - 1 s after it.
            assert sent_early_at < CLAIM_TTL - 1.0 - WAIT_CEILING, "the early request came too late"
            assert early.status_code == 409
            assert problem_code(early.json()) == "idempotency-request-in-progress"
            assert 1 <= int(early.headers["retry-after"]) <= CLAIM_TTL
            await asyncio.sleep(max(0.0, CLAIM_TTL + 0.5 - (time.monotonic() - killed_at)))
            recovered = await client.post(f"{base}{url}", json=body, headers=headers)
            replay = await client.post(f"{base}{url}", json=body, headers=headers)
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(30)
    assert recovered.status_code == 201 and "idempotent-replayed" not in recovered.headers
    assert replay.headers["idempotent-replayed"] == "true" and replay.content == recovered.content
    assert await _effects(pg_url, name) == 1  # the killed attempt's effect was never committed
