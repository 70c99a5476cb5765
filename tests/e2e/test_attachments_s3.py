"""Upload and download over HTTP, end to end: a real server, real PostgreSQL, real S3 (SeaweedFS)."""

from __future__ import annotations

import uuid
from email.message import Message
from email.utils import collapse_rfc2231_value
from pathlib import Path
from typing import Any

import httpx
import pytest
from dependency_injector import providers

from craig.adapters.objectstore.minio import MinioObjectStore
from craig.entrypoints.http.app import create_app
from craig.entrypoints.operations import collect_status
from tests.support import apps
from tests.support.apps import auth, live_server
from tests.support.files import png_bytes

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3]


def filename_of(disposition: str) -> str:
    """RFC 6266: the decoded ``filename*`` wins over the ASCII ``filename``."""
    message = Message()
    message["Content-Disposition"] = disposition
    params = message.get_params(header="content-disposition") or []
    return next(collapse_rfc2231_value(v) for k, v in params if k == "filename" and isinstance(v, tuple))


async def test_upload_and_download_a_png_and_a_utf8_named_file(
    tmp_path: Path, pg_url: str, s3_server: Any, s3_bucket: str
) -> None:
    container = apps.make_container(apps.make_settings("postgres", tmp_path, pg_url))
    store = MinioObjectStore(s3_server.endpoint, s3_server.access_key, s3_server.secret_key, s3_bucket, secure=False)
    container.object_store.override(providers.Object(store))  # before the app starts: S3 all along
    async with live_server(create_app(container)) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
        ann = auth(container, name="Ann Example")

        case = (await client.post("/v1/cases", json={"title": "Doe"}, headers=ann)).json()
        contact = (
            await client.post(
                f"/v1/cases/{case['id']}/contacts",
                json={"contact_type": "home_visit", "occurred_at": "2026-01-05T09:30:00Z", "summary": "Visited."},
                headers=ann,
            )
        ).json()
        base = f"/v1/cases/{case['id']}/contacts/{contact['id']}/attachments"
        png = png_bytes(16, 16)
        text = "Hausbesuch am 5. Januar: Küche in Ordnung.\n".encode()
        name = "Hausbesuch \u2013 Küche «家族» 📷.txt"  # an en dash, guillemets, CJK and an emoji

        for file_name, body, media_type in [("living-room.png", png, "image/png"), (name, text, "text/plain")]:
            key = str(uuid.uuid4())
            created = await client.post(
                base, files={"file": (file_name, body, media_type)}, headers={**ann, "Idempotency-Key": key}
            )
            assert created.status_code == 201, created.text
            attachment = created.json()
            assert attachment["file_name"] == file_name and attachment["object_status"] == "present"
            assert attachment["worker_name"] == "Ann Example"
            replay = await client.post(
                base, files={"file": (file_name, body, media_type)}, headers={**ann, "Idempotency-Key": key}
            )
            assert replay.headers["idempotent-replayed"] == "true" and replay.json() == attachment

            download = await client.get(f"{created.headers['location']}/content", headers=ann)
            assert download.status_code == 200 and download.content == body
            assert download.headers["content-type"].split(";")[0] == media_type
            assert download.headers["x-content-type-options"] == "nosniff"
            assert filename_of(download.headers["content-disposition"]) == file_name
            prefix = f"cases/contacts/{case['id']}/{contact['id']}/"
            stored = {o.object_name: o.size for o in s3_server.client().list_objects(s3_bucket, prefix, recursive=True)}
            assert len(body) in stored.values() and not any(file_name in key for key in stored)  # ids only

        listed = (await client.get(base, headers=ann)).json()
        assert [item["file_name"] for item in listed["items"]] == ["living-room.png", name]

        ready = (await client.get("/health/ready")).json()
        assert ready["dependencies"]["object_store"]["status"] == "up"
        metrics = (await client.get("/metrics")).text
        assert "craig_attachments_pending 0.0" in metrics
        status = await collect_status(container)
        assert status["attachments"]["contact_attachments: pending"] == 0
