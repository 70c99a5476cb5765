"""Contract of the ObjectStore port on every adapter: memory, local filesystem, S3 (SeaweedFS)."""

from __future__ import annotations

import asyncio
import os
import time
import tracemalloc
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from craig.adapters.memory.object_store import MemoryObjectStore
from craig.adapters.objectstore.filesystem import FilesystemObjectStore
from craig.adapters.objectstore.minio import MinioObjectStore
from craig.ports.errors import ObjectStoreDefect, ObjectStoreUnavailable
from craig.ports.object_store import InvalidObjectKey, ObjectStore
from tests.support.apps import free_port

pytestmark = pytest.mark.contract

KINDS = ["memory", "filesystem", "s3"]
LIST_PAGE_KEYS = 3


def s3_store(request: pytest.FixtureRequest, bucket: str, endpoint: str | None = None) -> MinioObjectStore:
    server = request.getfixturevalue("s3_server")
    return MinioObjectStore(endpoint or server.endpoint, server.access_key, server.secret_key, bucket, secure=False)


@pytest.fixture(params=KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ObjectStore]:
    if request.param == "memory":
        chosen: ObjectStore = MemoryObjectStore()
    elif request.param == "filesystem":
        # Pages of 3 keys, so that every listing here spans pages (S3 pages by 1000 itself).
        chosen = FilesystemObjectStore(tmp_path / "objects", list_page_keys=LIST_PAGE_KEYS)
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


#: Keys nested several levels deep, across several pages, with directories next to files that
#: extend their names ("c/" sorts before "cc", "a/" before "a0").
TREE = [
    "t/a/b",
    "t/a/c/d.bin",
    "t/a/c/e.bin",
    "t/a/cc",
    "t/a0",
    "t/ab/x",
    "t/b",
    "t/é/1",
    "t/é/2",
    "t/z/y/x/w",
    "u/a",
]
#: Names with characters that sort before "/" ("-", "."): in key order "a-b" < "a.txt" < "a/b",
#: which is not the order of the names "a" < "a-b" < "a.txt" in a directory.
BEFORE_SLASH = ["v/a/b", "v/a-b", "v/a.txt", "v/a/c.d/e", "v/a/c-d", "v/a/c.d-e"]


async def listed(store: ObjectStore, prefix: str, start_after: str | None = None) -> list[str]:
    return [o.key async for o in store.list(prefix, start_after=start_after)]


async def test_a_listing_across_pages_keeps_key_order_and_resumes_anywhere(store: ObjectStore) -> None:
    for key in reversed(TREE):
        await store.put(key, key.encode(), "text/plain")
    under_t = sorted(k for k in TREE if k.startswith("t/"))
    assert await listed(store, "t/") == under_t
    assert [o.size async for o in store.list("t/")] == [len(k.encode()) for k in under_t]
    assert await listed(store, "t/a") == [k for k in under_t if k.startswith("t/a")]
    assert await listed(store, "t/a/c/") == ["t/a/c/d.bin", "t/a/c/e.bin"]
    for marker in TREE:  # where a scan stopped: the last key it was given
        assert await listed(store, "t/", start_after=marker) == [k for k in under_t if k > marker], marker


async def test_names_before_the_slash_and_markers_that_are_no_key_list_in_key_order(store: ObjectStore) -> None:
    if isinstance(store, MinioObjectStore):
        pytest.skip(
            "SeaweedFS, the suite's S3, lists such names directory first and skips a directory named by a marker"
        )
    for key in BEFORE_SLASH:
        await store.put(key, b"x", "text/plain")
    assert await listed(store, "v/") == sorted(BEFORE_SLASH)
    for marker in [*BEFORE_SLASH, "v/", "v/a", "v/a/", "v/a/c", "v/a/c.", "v/a-", "v/0", "v/zz", "u"]:
        assert await listed(store, "v/", start_after=marker) == sorted(k for k in BEFORE_SLASH if k > marker), marker


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
    with pytest.raises(ObjectStoreDefect, match="does not exist"):
        await store.ping()
    await store.prepare()
    await store.ping()
    store.client.remove_bucket(store.bucket)


async def test_the_filesystem_store_reads_a_listing_one_page_at_a_time(tmp_path: Path) -> None:
    store = FilesystemObjectStore(tmp_path / "objects", list_page_keys=LIST_PAGE_KEYS)
    await store.prepare()
    keys = [f"p/{n}/blob" for n in range(1, 8)]
    for key in keys:
        await store.put(key, b"x", "text/plain")
    listing = store.list("p/")
    assert (await anext(listing)).key == "p/1/blob"  # the first page (3 keys) is read, no more
    await store.delete("p/6/blob")  # beyond the first page: never listed
    await store.put("p/9/blob", b"x", "text/plain")  # beyond it too: listed
    rest = [o.key async for o in listing]
    assert rest == ["p/2/blob", "p/3/blob", "p/4/blob", "p/5/blob", "p/7/blob", "p/9/blob"]


async def test_a_filesystem_page_of_a_large_directory_holds_a_page_of_it_not_all_of_it(tmp_path: Path) -> None:
    """A directory lists in no useful order, so a page reads it whole; it keeps only the entries
    that can still be on the page. 20,000 names and their entries would take megabytes."""
    store = FilesystemObjectStore(tmp_path / "objects", list_page_keys=10)
    await store.prepare()
    directory = tmp_path / "objects" / "data" / "big"
    directory.mkdir()
    for n in range(20_000):
        (directory / f"{n:05}").touch()
    tracemalloc.start()
    try:
        listing = store.list("big/", start_after="big/09999")
        page = [await anext(listing) for _ in range(10)]  # exactly the first page
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    await listing.aclose()
    assert [o.key for o in page] == [f"big/{n:05}" for n in range(10_000, 10_010)]
    assert peak < 500_000, f"{peak} bytes traced while one page of 10 keys was read"


async def test_the_filesystem_store_removes_a_crashed_puts_temporary_file_when_it_starts(tmp_path: Path) -> None:
    """A put killed between writing its temporary file and renaming it leaves the file; the
    next start removes it once it is stale, and leaves a younger one (another process's put)."""
    store = FilesystemObjectStore(tmp_path / "objects")
    await store.prepare()
    incoming = tmp_path / "objects" / "incoming"
    stale, young = incoming / "put-crashed", incoming / "put-in-progress"
    stale.write_bytes(b"half")
    young.write_bytes(b"half")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    await store.prepare()
    assert sorted(p.name for p in incoming.iterdir()) == ["put-in-progress"]
