"""Bodies over the configured limit get a 413 problem before they are read whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from craig.entrypoints.settings import HttpSettings
from tests.support.apps import auth, serving

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("with_key", [False, True])
async def test_an_oversized_body_is_413(tmp_path: Path, with_key: bool) -> None:
    async with serving("memory", tmp_path, http=HttpSettings(max_body_bytes=1024)) as (container, client):
        headers = {**auth(container), "Content-Type": "application/json"}
        if with_key:
            headers["Idempotency-Key"] = "big-body"
        body = b'{"title": "' + b"x" * 4096 + b'"}'
        response = await client.post("/v1/cases", content=body, headers=headers)
        assert response.status_code == 413
        assert response.headers["content-type"] == "application/problem+json"
        assert response.headers["strict-transport-security"]
        # The refused body never claimed the key, so the key is still free for a proper request.
        small = await client.post("/v1/cases", json={"title": "fits"}, headers=headers)
        assert small.status_code == 201
