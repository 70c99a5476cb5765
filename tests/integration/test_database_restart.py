"""The database restarts under a running API: requests fail with a retryable 503 at worst,
never a 500, and the API recovers by itself without a restart."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

import pytest

from craig.adapters.postgres.embedded import EmbeddedPostgres
from craig.adapters.postgres.migrations import upgrade_to_head
from tests.support.apps import auth, serving

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


async def test_the_api_survives_a_database_restart(tmp_path: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix="craig-test-restart-"))
    root.chmod(0o755)
    server = EmbeddedPostgres(root / "pg", fsync="off")
    try:
        await asyncio.to_thread(server.start)
        await asyncio.to_thread(server.ensure_database, "craig")
        url = server.url("craig")
        await asyncio.to_thread(upgrade_to_head, url)
        async with serving("postgres", tmp_path, url) as (container, client):
            headers = auth(container)
            assert (await client.post("/v1/cases", json={"title": "before"}, headers=headers)).status_code == 201

            await asyncio.to_thread(server.stop)
            down = await client.post("/v1/cases", json={"title": "during"}, headers=headers)
            assert down.status_code == 503 and down.headers["retry-after"]
            ready = await client.get("/health/ready")
            assert ready.status_code == 503 and ready.json()["dependencies"]["database"]["status"] == "down"

            await asyncio.to_thread(server.start)
            statuses = [
                (await client.post("/v1/cases", json={"title": f"after {n}"}, headers=headers)).status_code
                for n in range(5)
            ]
            assert all(status in (201, 503) for status in statuses)
            assert statuses[-3:] == [201, 201, 201]  # recovered without restarting the API
            assert (await client.get("/health/ready")).status_code == 200
    finally:
        await asyncio.to_thread(server.stop)
        shutil.rmtree(root, ignore_errors=True)
