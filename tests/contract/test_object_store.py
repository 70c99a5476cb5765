"""Contract of the ObjectStore port on every adapter: memory, local filesystem, S3 (SeaweedFS)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from craig.adapters.memory.object_store import MemoryObjectStore
from craig.adapters.objectstore.filesystem import FilesystemObjectStore
from craig.adapters.objectstore.minio import MinioObjectStore
from craig.ports.errors import ObjectStoreUnavailable
from craig.ports.object_store import InvalidObjectKey, ObjectStore
from tests.support.apps import free_port

pytestmark = pytest.mark.contract

KINDS = ["memory", "filesystem", "s3"]


def s3_store(request: pytest.FixtureRequest, bucket: str, endpoint: str | None = None) -> MinioObjectStore:
    server = request.getfixturevalue("s3_server")
    return MinioObjectStore(endpoint or server.endpoint, server.access_key, server.secret_key, bucket, secure=False)


@pytest.fixture(params=KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ObjectStore]:
    if request.param == "memory":
        chosen: ObjectStore = MemoryObjectStore()
    elif request.param == "filesystem":
        chosen = FilesystemObjectStore(tmp_path / "objects")
    else:
        chosen = s3_store(request, request.getfixturevalue("s3_bucket"))
    await chosen.prepare()
    yield chosen


@pytest.fixture(params=KINDS)
async def broken_store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    """A store that cannot work: switched off, a file where its directory should be, a dead port."""
    if request.param == "memory":
        memory = MemoryObjectStore()
        memory.available = False
        return memory
    if request.param == "filesystem":
        (tmp_path / "objects").write_bytes(b"not a directory")
        return FilesystemObjectStore(tmp_path / "objects")
    return s3_store(request, "craig-nowhere", endpoint=f"127.0.0.1:{free_port()}")


async def read(store: ObjectStore, key: str, chunk_size: int = 1 << 16) -> bytes | None:
    download = await store.open(key, chunk_size)
    if download is None:
        return None
    chunks = [chunk async for chunk in download.chunks]
    assert all(0 < len(chunk) <= chunk_size for chunk in chunks)
    body = b"".join(chunks)
    assert len(body) == download.size
    return body


async def test_put_head_open_delete(store: ObjectStore) -> None:
    key = "cases/contacts/a/b/c/Küche 家族.png"
    assert await store.head(key) is None and await store.open(key, 1024) is None
    await store.put(key, b"first version, longer", "image/png")
    await store.put(key, b"second", "image/png")  # replaces whole
    assert await store.head(key) == 6
    assert await read(store, key) == b"second"
    await store.delete(key)
    await store.delete(key)  # a missing key is not an error
    assert await store.head(key) is None and await read(store, key) is None


async def test_large_objects_stream_in_bounded_chunks(store: ObjectStore) -> None:
    body = os.urandom(3 * 1024 * 1024 + 17)
    await store.put("big/blob.bin", body, "application/octet-stream")
    assert await read(store, "big/blob.bin", chunk_size=256 * 1024) == body
    download = await store.open("big/blob.bin", 1024)
    assert download is not None
    assert len(await anext(download.chunks)) == 1024
    await download.aclose()  # closing half-way releases the file or connection
    await store.put("empty/blob.bin", b"", "application/octet-stream")
    assert await store.head("empty/blob.bin") == 0 and await read(store, "empty/blob.bin") == b""


async def test_list_filters_by_prefix_in_key_order_and_resumes(store: ObjectStore) -> None:
    keys = ["p/b/2.txt", "p/a/1.txt", "p/é/3.txt", "p/a/0.txt", "q/x.txt", "p2/y.txt"]
    before = datetime.now(UTC) - timedelta(minutes=5)
    for index, key in enumerate(keys):
        await store.put(key, b"x" * index, "text/plain")
    listed = [o async for o in store.list("p/")]
    assert [o.key for o in listed] == ["p/a/0.txt", "p/a/1.txt", "p/b/2.txt", "p/é/3.txt"]
    assert [o.size for o in listed] == [3, 1, 0, 2]
    assert all(before < o.last_modified < datetime.now(UTC) + timedelta(minutes=5) for o in listed)
    assert [o.key async for o in store.list("p/", start_after="p/a/1.txt")] == ["p/b/2.txt", "p/é/3.txt"]
    assert [o.key async for o in store.list("p")] == [o.key for o in listed] + ["p2/y.txt"]
    assert [o async for o in store.list("nothing/")] == []


async def test_concurrent_puts_leave_one_whole_version(store: ObjectStore) -> None:
    versions = [bytes([n]) * (1000 * (n + 1)) for n in range(6)]
    await asyncio.gather(*(store.put("race/key.bin", v, "application/octet-stream") for v in versions))
    assert await read(store, "race/key.bin") in versions


@pytest.mark.parametrize("key", ["", "/abs", "a//b", "a/../b", "./a", "a/.", "nul\x00byte", "x" * 1025])
async def test_invalid_keys_are_refused_alike(store: ObjectStore, key: str) -> None:
    with pytest.raises(InvalidObjectKey):
        await store.put(key, b"x", "text/plain")
    with pytest.raises(InvalidObjectKey):
        await store.head(key)


async def test_prepare_is_idempotent_and_ping_answers(store: ObjectStore) -> None:
    await store.prepare()
    await store.ping()


async def test_an_unusable_store_raises_object_store_unavailable(broken_store: ObjectStore) -> None:
    for call in (
        broken_store.ping(),
        broken_store.put("a/b.txt", b"x", "text/plain"),
        broken_store.head("a/b.txt"),
    ):
        with pytest.raises(ObjectStoreUnavailable):
            await call


@pytest.mark.s3
async def test_s3_prepare_creates_a_missing_bucket(request: pytest.FixtureRequest) -> None:
    store = s3_store(request, f"t-{uuid.uuid4().hex[:12]}")
    with pytest.raises(ObjectStoreUnavailable, match="does not exist"):
        await store.ping()
    await store.prepare()
    await store.ping()
    store.client.remove_bucket(store.bucket)
