"""Startup reaches the object store: production fails fast naming the S3 endpoint, and a missing
bucket is created (real SeaweedFS)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from craig.entrypoints.container import build_container
from craig.entrypoints.runtime import StartupError, health_checks, running
from craig.entrypoints.settings import DatabaseSettings, ObjectStoreSettings, Profile, Settings
from tests.support.apps import free_port

pytestmark = [pytest.mark.integration, pytest.mark.s3]


def production(tmp_path: Path, endpoint: str, bucket: str, s3: Any = None) -> Settings:
    return Settings(
        profile=Profile.PRODUCTION,
        data_dir=tmp_path,
        database=DatabaseSettings(url="postgresql://unused@127.0.0.1:1/unused"),
        object_store=ObjectStoreSettings(
            endpoint=endpoint,
            access_key=s3.access_key if s3 else "nobody",
            secret_key=s3.secret_key if s3 else "nothing",
            bucket=bucket,
            secure=False,
        ),
    )


async def test_an_unreachable_endpoint_stops_startup_with_its_name(tmp_path: Path) -> None:
    endpoint = f"127.0.0.1:{free_port()}"
    container = build_container(production(tmp_path, endpoint, "craig-attachments"))
    with pytest.raises(StartupError, match=f"cannot reach the S3 endpoint '{endpoint}'.*CRAIG_OBJECT_STORE__ENDPOINT"):
        async with running(container, parts=["object_store"]):
            pass


async def test_a_missing_bucket_is_created_and_then_ready(tmp_path: Path, s3_server: Any) -> None:
    bucket = f"t-{uuid.uuid4().hex[:12]}"
    container = build_container(production(tmp_path, s3_server.endpoint, bucket, s3_server))
    client = s3_server.client()
    assert not client.bucket_exists(bucket)
    try:
        async with running(container, parts=["object_store"]):
            assert client.bucket_exists(bucket)
        async with running(container, parts=["object_store"]):  # started again: the bucket exists
            await health_checks(container)["object_store"]()
    finally:
        client.remove_bucket(bucket)


async def test_the_embedded_store_lives_under_the_data_dir(tmp_path: Path) -> None:
    container = build_container(Settings(profile=Profile.EMBEDDED, data_dir=tmp_path))
    async with running(container, parts=["object_store"]):
        assert (tmp_path / "objects" / "data").is_dir()
