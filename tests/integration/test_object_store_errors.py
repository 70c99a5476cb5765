"""The S3 adapter's error translation on a real SeaweedFS S3: only what a retry can outlive (no
connection, a timeout, a 5xx) is ``ObjectStoreUnavailable`` and a 503; wrong credentials, a
missing bucket and arguments the SDK rejects are an ``ObjectStoreDefect``, answered 500 with an
incident id, so clients do not retry a misconfiguration forever."""

from __future__ import annotations

import asyncio
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from dependency_injector import providers
from minio.error import S3Error

from craig.adapters.objectstore.minio import MinioObjectStore
from craig.domain.access import Role
from craig.domain.constants import OBJECT_STORE_CHECK_TIMEOUT, OBJECT_STORE_READ_TIMEOUT, OBJECT_STORE_RETRIES
from craig.entrypoints.container import Container
from craig.ports.errors import ObjectStoreDefect, ObjectStoreUnavailable
from craig.ports.object_store import ObjectStore
from tests.support.apps import auth, serving
from tests.support.files import png_bytes
from tests.support.problems import problem_code
from tests.support.raw_http import answer, raw_http
from tests.support.services import SeaweedS3
from tests.support.silent_servers import tcp_server

pytestmark = [pytest.mark.integration, pytest.mark.s3]


def store_for(server: SeaweedS3, bucket: str, *, access_key: str = "", secret_key: str = "") -> MinioObjectStore:
    return MinioObjectStore(
        server.endpoint, access_key or server.access_key, secret_key or server.secret_key, bucket, secure=False
    )


async def _listed(store: ObjectStore) -> None:
    async for _ in store.list("a/"):
        pass


def calls(store: ObjectStore) -> dict[str, Callable[[], Awaitable[Any]]]:
    return {
        "put": lambda: store.put("a/b.txt", b"x", "text/plain"),
        "head": lambda: store.head("a/b.txt"),
        "open": lambda: store.open("a/b.txt", 1024),
        "delete": lambda: store.delete("a/b.txt"),
        "list": lambda: _listed(store),
        "ping": store.ping,
    }


def s3_code(error: BaseException) -> str | None:
    cause = error.__cause__
    return cause.code if isinstance(cause, S3Error) else None


@pytest.mark.parametrize(
    ("credentials", "codes"),
    [
        ({"secret_key": "not-the-secret-key"}, {"SignatureDoesNotMatch", "AccessDenied"}),
        ({"access_key": "nobody-we-know"}, {"InvalidAccessKeyId", "AccessDenied"}),
    ],
    ids=["wrong secret key", "unknown access key"],
)
async def test_wrong_credentials_are_a_defect_not_unavailable(
    s3_server: SeaweedS3, s3_bucket: str, credentials: dict[str, str], codes: set[str]
) -> None:
    store = store_for(s3_server, s3_bucket, **credentials)
    for name, call in calls(store).items():
        with pytest.raises(ObjectStoreDefect) as refused:
            await call()
        assert not isinstance(refused.value, ObjectStoreUnavailable), name
        if name not in ("ping", "head"):  # HEAD answers carry no body, so no S3 code
            assert s3_code(refused.value) in codes, (name, refused.value)


async def test_a_missing_bucket_is_a_defect(s3_server: SeaweedS3) -> None:
    store = store_for(s3_server, f"t-missing-{uuid.uuid4().hex[:8]}")
    with pytest.raises(ObjectStoreDefect) as refused:
        await store.put("a/b.txt", b"x", "text/plain")
    assert s3_code(refused.value) == "NoSuchBucket"
    with pytest.raises(ObjectStoreDefect, match="does not exist"):
        await store.ping()


async def test_an_argument_the_sdk_rejects_is_a_defect(s3_server: SeaweedS3) -> None:
    store = store_for(s3_server, "ab")  # shorter than S3 allows: the SDK refuses before sending
    with pytest.raises(ObjectStoreDefect, match="ValueError"):
        await store.put("a/b.txt", b"x", "text/plain")
    store = store_for(s3_server, "Not_A_Valid_Bucket_Name")  # this one the server refuses
    with pytest.raises(ObjectStoreDefect) as refused:
        await store.put("a/b.txt", b"x", "text/plain")
    assert s3_code(refused.value) == "InvalidBucketName"


async def test_a_server_that_went_down_is_unavailable(tmp_path: Path) -> None:
    server = SeaweedS3(tmp_path / "s3")
    server.start()
    try:
        store = store_for(server, "craig-down")
        await store.prepare()
        await store.put("a/b.txt", b"x", "text/plain")
    finally:
        server.stop()
    for name, call in calls(store).items():
        with pytest.raises(ObjectStoreUnavailable):
            await call()
        assert name


# --- over HTTP: an upload answers 500 for a misconfiguration, 503 for an outage -----------------


async def _attachments_path(client: httpx.AsyncClient, ann: dict[str, str]) -> str:
    case = (await client.post("/v1/cases", json={"title": "Doe"}, headers=ann)).json()["id"]
    body = {"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00Z", "summary": "Visited."}
    contact = (await client.post(f"/v1/cases/{case}/contacts", json=body, headers=ann)).json()["id"]
    return f"/v1/cases/{case}/contacts/{contact}/attachments"


async def _upload(client: httpx.AsyncClient, path: str, ann: dict[str, str]) -> httpx.Response:
    files = {"file": ("a.png", png_bytes(), "image/png")}
    return await client.post(path, files=files, headers={**ann, "Idempotency-Key": uuid.uuid4().hex})


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[tuple[Container, httpx.AsyncClient]]:
    async with serving("memory", tmp_path) as served:
        yield served


async def test_an_upload_with_a_wrong_secret_key_is_a_500_with_an_incident(
    app: tuple[Container, httpx.AsyncClient], s3_server: SeaweedS3, s3_bucket: str
) -> None:
    container, client = app
    ann = auth(container, role=Role.CASEWORKER)
    path = await _attachments_path(client, ann)
    container.object_store.override(providers.Object(store_for(s3_server, s3_bucket, secret_key="wrong-secret")))
    refused = await _upload(client, path, ann)
    assert refused.status_code == 500, refused.text
    assert problem_code(refused.json()) == "internal-error" and refused.json()["incident"]
    assert "retry-after" not in refused.headers
    container.object_store.override(providers.Object(store_for(s3_server, s3_bucket)))
    assert (await _upload(client, path, ann)).status_code == 201  # fixed: the same route works


async def test_an_upload_while_the_s3_server_is_down_is_a_503(
    app: tuple[Container, httpx.AsyncClient], tmp_path: Path
) -> None:
    container, client = app
    ann = auth(container, role=Role.CASEWORKER)
    path = await _attachments_path(client, ann)
    server = SeaweedS3(tmp_path / "s3")
    server.start()
    try:
        store = store_for(server, "craig-down")
        await store.prepare()
        container.object_store.override(providers.Object(store))
        assert (await _upload(client, path, ann)).status_code == 201
    finally:
        server.stop()
    unavailable = await _upload(client, path, ann)
    assert unavailable.status_code == 503, unavailable.text
    assert problem_code(unavailable.json()) == "dependency-unavailable"
    assert unavailable.headers["retry-after"]


async def test_a_server_that_never_answers_is_asked_once_per_call_on_the_stores_own_threads() -> None:
    """A hung S3 (it accepts and never answers) costs one read timeout per call, not one per
    retry, and ties up the store's own threads, never the event loop's default pool."""
    async with tcp_server() as hung:
        store = MinioObjectStore(
            f"127.0.0.1:{hung.port}", "k", "s", "craig-hung", secure=False, read_timeout_seconds=0.5
        )
        with pytest.raises(ObjectStoreUnavailable):
            await store.head("a/b.txt")
        assert len(hung.accepted) == 1
        assert (await store._call(lambda: threading.current_thread().name)).startswith("craig-s3")
        # The checks (start, readiness, craig status) carry no transfer: they read with a short
        # timeout of their own, not the transfers' (60 s by default; 0.5 s in this test).
        with pytest.raises(ObjectStoreUnavailable):
            await store.ping()
        assert len(hung.accepted) == 2
        checks_timeout = store._checks._http.connection_pool_kw["timeout"].read_timeout
        assert checks_timeout == OBJECT_STORE_CHECK_TIMEOUT.total_seconds() < OBJECT_STORE_READ_TIMEOUT.total_seconds()


_EXIT_DURING_A_HUNG_PUT = """
import asyncio, sys
from craig.adapters.objectstore.minio import MinioObjectStore

async def main() -> None:
    store = MinioObjectStore(sys.argv[1], "k", "s", "craig-hung", secure=False, read_timeout_seconds=600)
    put = asyncio.create_task(store.put("a/b.txt", b"x", "text/plain"))
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # the test says when
    put.cancel()  # as a stopping process cancels its requests

asyncio.run(main())
print("exited", flush=True)
"""


async def test_a_process_stops_without_waiting_for_a_call_to_a_hung_server() -> None:
    """A blocking SDK call to an S3 that went silent must not hold the process's exit until its
    read timeout (a minute by default; 600 s here): the store's threads are daemons. With the
    standard thread pool, the interpreter joined the thread at exit and waited that long."""
    async with tcp_server() as hung:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _EXIT_DURING_A_HUNG_PUT,
            f"127.0.0.1:{hung.port}",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            while not hung.accepted:  # the put is now blocked in a thread, reading
                await asyncio.sleep(0.01)
            # A guard against hanging the suite, not a measurement: the exit takes well under a
            # second; the defect it catches held it for the read timeout of 600 s.
            out, _ = await asyncio.wait_for(process.communicate(b"stop\n"), timeout=120)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert (process.returncode, out) == (0, b"exited\n")
        assert not hung.accepted[0].is_closing()  # the server never answered or let go


async def test_a_put_over_the_multipart_threshold_is_one_request(s3_server: SeaweedS3, s3_bucket: str) -> None:
    """The SDK splits anything over 5 MiB into an S3 multipart upload unless told otherwise; one cut
    short would leave parts no listing shows. The store sends one PUT."""
    store = store_for(s3_server, s3_bucket)

    def no_multipart(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("a multipart upload was started")

    store.client._create_multipart_upload = no_multipart  # type: ignore[method-assign]
    data = bytes(range(256)) * (6 * 1024 * 4)  # 6 MiB
    await store.put("a/large.bin", data, "application/octet-stream")
    assert await store.head("a/large.bin") == len(data)
    await store.delete("a/large.bin")


async def test_a_connection_the_server_drops_is_retried_on_a_fresh_one() -> None:
    """A server (or a load balancer) that closes a connection without answering is asked again,
    OBJECT_STORE_RETRIES times: only a read timeout is final."""
    async with tcp_server(drop=True) as dropping:
        store = MinioObjectStore(
            f"127.0.0.1:{dropping.port}", "k", "s", "craig-drops", secure=False, read_timeout_seconds=5
        )
        with pytest.raises(ObjectStoreUnavailable):
            await store.head("a/b.txt")
        assert len(dropping.accepted) == 1 + OBJECT_STORE_RETRIES


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (408, ObjectStoreUnavailable),  # a request timeout: a retry may outlive it
        (429, ObjectStoreUnavailable),  # throttling
        (503, ObjectStoreUnavailable),
        (403, ObjectStoreDefect),  # access denied: an operator must act
    ],
)
async def test_a_head_answered_without_a_body_is_classified_by_its_status(status: int, error: type[Exception]) -> None:
    """A HEAD's answer has no body, so no S3 error code: the status alone says whether a retry
    may outlive it. A throttled HEAD was a defect, which the scanner reads as a refusal of that
    one object for good (and an upload answered 500 with an incident, not a retryable 503)."""
    async with raw_http(lambda _method, _path: answer(f"{status} Whatever", b"")) as server:
        store = MinioObjectStore(f"127.0.0.1:{server.port}", "k", "s", "craig-status", secure=False, region="us-east-1")
        with pytest.raises(error):
            await store.head("cases/contacts/a/b.txt")
