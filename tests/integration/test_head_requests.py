"""``HEAD`` over real HTTP: every route that answers ``GET`` answers ``HEAD`` with the same status
and headers and no content (uptime checkers and caches ask it), a route without ``GET`` still
answers 405, and the ``Allow`` header names every method of the path, ``HEAD`` wherever ``GET``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support import apps
from tests.support.apps import serving
from tests.support.metrics import http_requests_counted

pytestmark = pytest.mark.integration

_SAME = ("content-length", "content-type", "etag", "cache-control", "x-content-type-options")


async def test_head_answers_as_get_does_without_content(tmp_path: Path) -> None:
    before = http_requests_counted("HEAD", "/v1/cases/{case_id}", 200)
    async with serving("memory", tmp_path) as (container, client):
        headers = apps.auth(container)
        opened = await client.post("/v1/cases", json={"title": "t"}, headers=headers)
        assert opened.status_code == 201, opened.text
        for path in (
            "/health/live",
            "/health/ready",
            "/v1/me",
            f"/v1/cases/{opened.json()['id']}",
            "/api-doc/openapi.json",
        ):
            got, head = await client.get(path, headers=headers), await client.head(path, headers=headers)
            assert got.status_code == head.status_code == 200, (path, head.status_code)
            assert head.content == b""
            for name in _SAME:
                assert head.headers.get(name) == got.headers.get(name), (path, name)
            assert head.headers["x-request-id"]

        unauthenticated = await client.head("/v1/me")
        assert unauthenticated.status_code == 401 and unauthenticated.content == b""
        missing = await client.head("/v1/cases/00000000-0000-7000-8000-000000000000", headers=headers)
        assert missing.status_code == 404

        post_only = await client.head(f"/v1/cases/{opened.json()['id']}/closure", headers=headers)
        assert post_only.status_code == 405 and "HEAD" not in post_only.headers["allow"]
        # Where handlers share a path (GET and POST on /v1/cases), every answer names them all.
        options, refused_here = await client.options("/v1/cases"), await client.delete("/v1/cases", headers=headers)
        assert (options.status_code, refused_here.status_code) == (204, 405)
        for answer in (options, refused_here):
            assert {m.strip() for m in answer.headers["allow"].split(",")} == {"GET", "HEAD", "OPTIONS", "POST"}
        refused = await client.delete("/health/live")
        assert refused.status_code == 405
        assert {m.strip() for m in refused.headers["allow"].split(",")} == {"OPTIONS", "GET", "HEAD"}

        # What goes over the wire: the headers, then nothing, for a body of several kilobytes.
        url = urlsplit(str(client.base_url))
        reader, writer = await asyncio.open_connection(url.hostname, url.port)
        writer.write(b"HEAD /api-doc/openapi.json HTTP/1.1\r\nHost: craig\r\nConnection: close\r\n\r\n")
        await writer.drain()
        raw = await reader.read()
        writer.close()
    head_block, _, after = raw.partition(b"\r\n\r\n")
    assert head_block.startswith(b"HTTP/1.1 200") and int(_header(head_block, b"content-length")) > 1000
    assert after == b""
    assert http_requests_counted("HEAD", "/v1/cases/{case_id}", 200) == before + 1  # counted as what it was


def _header(block: bytes, name: bytes) -> bytes:
    for line in block.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    raise AssertionError(f"no {name!r} header")
