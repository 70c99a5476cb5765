"""The S3 object store (MinIO SDK; any S3 endpoint: MinIO, SeaweedFS, AWS).

The SDK is blocking, so every call runs in a thread of the store's own pool (at most
``OBJECT_STORE_MAX_CONNECTIONS``): an S3 that hangs ties up those threads only, never the
event loop's default pool, which DNS lookups, hashing and the rest of the process share, and
never the process's exit (daemon threads: :mod:`craig.adapters.objectstore.threads`). A read
timeout is not retried (a server that sent nothing for ``OBJECT_STORE_READ_TIMEOUT`` is not
asked again, so a call gives up after one read timeout, not three); connection failures and 5xx
answers are, ``OBJECT_STORE_RETRIES`` times. A put is one PUT request, never an S3 multipart
upload, so a put cut short leaves no incomplete upload behind (the SDK would split anything over
5 MiB into parts, and a crash between them leaves parts no listing shows). A missing key
(``NoSuchKey``) is an answer, not an error. Other errors are translated by what a retry can do:

* :class:`ObjectStoreUnavailable` (retryable, HTTP 503): no connection, a timeout, a broken
  response, or a 5xx (``InternalError``, ``SlowDown``, ...) once urllib3's own retries are spent;
* :class:`ObjectStoreDefect` (HTTP 500 with an incident id): everything the server refuses for
  good (``AccessDenied``, ``InvalidAccessKeyId``, ``SignatureDoesNotMatch``, ``NoSuchBucket``,
  any other 4xx) and arguments the SDK rejects (``ValueError``). Retrying cannot fix these; an
  operator must fix the credentials, the bucket or the code.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import io
from collections.abc import AsyncGenerator, Callable, Iterator
from itertools import islice
from types import TracebackType
from typing import Any, Self, TypeVar

import urllib3
from minio import Minio
from minio.error import InvalidResponseError, MinioException, S3Error, ServerError
from minio.helpers import MAX_PART_SIZE, MIN_PART_SIZE

from craig.adapters.objectstore.threads import DaemonThreadPool
from craig.domain.constants import (
    OBJECT_STORE_CHECK_TIMEOUT,
    OBJECT_STORE_CONNECT_TIMEOUT,
    OBJECT_STORE_LIST_PAGE_KEYS,
    OBJECT_STORE_MAX_CONNECTIONS,
    OBJECT_STORE_READ_TIMEOUT,
    OBJECT_STORE_RETRIES,
    OBJECT_STORE_RETRY_BACKOFF,
)
from craig.ports.errors import ObjectStoreDefect, ObjectStoreUnavailable, PortError
from craig.ports.object_store import Download, ObjectStore, StoredObject, check_key

T = TypeVar("T")
_MISSING_CODES = frozenset({"NoSuchKey", "NoSuchObject", "ResourceNotFound", "NotFound"})
#: S3 error codes a retry may outlive (they come with a 5xx, or a 4xx for a slow request).
_TRANSIENT_CODES = frozenset({"InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout"})
#: HTTP statuses a retry may outlive though under 500: a request timeout and throttling (a HEAD's
#: answer has no body, so no S3 code says ``RequestTimeout`` or ``SlowDown`` there).
_TRANSIENT_STATUSES = frozenset({408, 429})
# ValueError: the SDK validates arguments such as the bucket name (a configuration error).
_FAILURES = (MinioException, urllib3.exceptions.HTTPError, OSError, ValueError)


def _missing(error: BaseException | None) -> bool:
    return isinstance(error, S3Error) and error.code in _MISSING_CODES


def _status(error: MinioException) -> int | None:
    if isinstance(error, S3Error):
        return int(error.response.status) if error.response is not None else None
    if isinstance(error, ServerError):
        return error.status_code
    if isinstance(error, InvalidResponseError):  # a non-S3 answer (a proxy's error page)
        code = getattr(error, "_code", None)  # the SDK keeps the status in no public field
        return code if isinstance(code, int) else None
    return None


class _ReadTimeoutIsFinal(urllib3.Retry):
    """urllib3's retries, except that a read timeout is final: a server silent that long is
    not asked again (``read=0`` would also stop retrying a connection the server or a load
    balancer dropped, which a retry on a fresh connection outlives)."""

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: TracebackType | None = None,
    ) -> Self:
        if isinstance(error, urllib3.exceptions.ReadTimeoutError):
            raise error  # an HTTPError: translated to ObjectStoreUnavailable like any other
        return super().increment(method, url, response, error, _pool, _stacktrace)


def translate(error: BaseException, endpoint: str) -> PortError:
    """The port error for an SDK or transport error (see the module docstring)."""
    detail = f"S3 {endpoint}: {type(error).__name__}: {error}"
    if isinstance(error, (urllib3.exceptions.HTTPError, OSError)):
        return ObjectStoreUnavailable(detail)
    if isinstance(error, MinioException):
        status = _status(error)
        code = error.code if isinstance(error, S3Error) else None
        if code in _TRANSIENT_CODES or status is None or status >= 500 or status in _TRANSIENT_STATUSES:
            return ObjectStoreUnavailable(detail)
    return ObjectStoreDefect(detail)


class MinioObjectStore(ObjectStore):
    def __init__(
        self,
        endpoint: str,
        access_key: str,
        secret_key: str,
        bucket: str,
        *,
        secure: bool = True,
        region: str = "",
        read_timeout_seconds: float = OBJECT_STORE_READ_TIMEOUT.total_seconds(),
    ) -> None:
        self.endpoint = endpoint
        self.bucket = bucket

        def client(read_timeout: float, retries: urllib3.Retry, connections: int) -> Minio:
            http = urllib3.PoolManager(
                timeout=urllib3.Timeout(connect=OBJECT_STORE_CONNECT_TIMEOUT.total_seconds(), read=read_timeout),
                retries=retries,
                maxsize=connections,
            )
            return Minio(
                endpoint,
                access_key=access_key,
                secret_key=secret_key,
                secure=secure,
                region=region or None,
                http_client=http,
            )

        self.client = client(
            read_timeout_seconds,
            _ReadTimeoutIsFinal(
                total=OBJECT_STORE_RETRIES,
                backoff_factor=OBJECT_STORE_RETRY_BACKOFF.total_seconds(),
                status_forcelist=[500, 502, 503, 504],
            ),
            OBJECT_STORE_MAX_CONNECTIONS,
        )
        #: For ``prepare`` and ``ping`` (a bucket's existence, a few bytes): a read timeout of
        #: ``OBJECT_STORE_CHECK_TIMEOUT`` and one retry (a dropped connection), so a start, a
        #: readiness probe or ``craig status`` learns in seconds that a silent S3 is down, not
        #: after a transfer's read timeout.
        self._checks = client(OBJECT_STORE_CHECK_TIMEOUT.total_seconds(), _ReadTimeoutIsFinal(total=1, redirect=0), 2)
        self._threads = DaemonThreadPool(OBJECT_STORE_MAX_CONNECTIONS, "craig-s3")

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
            return await asyncio.get_running_loop().run_in_executor(self._threads, call)
        except _FAILURES as error:
            raise translate(error, self.endpoint) from error

    async def prepare(self) -> None:
        if await self._call(self._checks.bucket_exists, self.bucket):
            return
        try:
            await self._call(self._checks.make_bucket, self.bucket)
        except ObjectStoreDefect as error:
            cause = error.__cause__
            if not (isinstance(cause, S3Error) and cause.code in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists")):
                raise

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        check_key(key)
        await self._call(
            self.client.put_object,
            self.bucket,
            key,
            io.BytesIO(data),
            len(data),
            content_type=content_type or "application/octet-stream",
            part_size=min(max(len(data), MIN_PART_SIZE), MAX_PART_SIZE),  # one part: one PUT
        )

    async def open(self, key: str, chunk_size: int) -> Download | None:
        check_key(key)
        try:
            response = await self._call(self.client.get_object, self.bucket, key)
        except ObjectStoreDefect as error:
            if _missing(error.__cause__):
                return None
            raise
        size = int(response.headers.get("Content-Length", "0"))
        return Download(size=size, chunks=_ResponseChunks(self, response, chunk_size))

    async def head(self, key: str) -> int | None:
        check_key(key)
        try:
            stat = await self._call(self.client.stat_object, self.bucket, key)
        except ObjectStoreDefect as error:
            if _missing(error.__cause__):
                return None
            raise
        return int(stat.size or 0)

    async def delete(self, key: str) -> None:
        check_key(key)
        await self._call(self.client.remove_object, self.bucket, key)

    async def list(self, prefix: str, start_after: str | None = None) -> AsyncGenerator[StoredObject, None]:
        listing: Iterator[Any] = await self._call(
            self.client.list_objects, self.bucket, prefix=prefix, recursive=True, start_after=start_after
        )
        while True:
            page = await self._call(lambda: list(islice(listing, OBJECT_STORE_LIST_PAGE_KEYS)))
            for item in page:
                if item.object_name is not None and not item.is_dir:
                    yield StoredObject(key=item.object_name, size=int(item.size or 0), last_modified=item.last_modified)
            if len(page) < OBJECT_STORE_LIST_PAGE_KEYS:
                return

    async def ping(self) -> None:
        if not await self._call(self._checks.bucket_exists, self.bucket):
            raise ObjectStoreDefect(f"S3 {self.endpoint}: bucket {self.bucket!r} does not exist")

    def __repr__(self) -> str:
        return f"MinioObjectStore({self.endpoint!r}, bucket={self.bucket!r})"


class _ResponseChunks:
    """Chunks of an S3 GET response; the connection goes back to the pool when done or closed."""

    def __init__(self, store: MinioObjectStore, response: Any, chunk_size: int) -> None:
        self._store = store
        self._response = response
        self._chunk_size = chunk_size
        self._closed = False

    def __aiter__(self) -> _ResponseChunks:
        return self

    async def __anext__(self) -> bytes:
        if self._closed:
            raise StopAsyncIteration
        try:
            chunk = await self._store._call(self._response.read, self._chunk_size)
        except BaseException:
            await self.aclose()
            raise
        if not chunk:
            await self.aclose()
            raise StopAsyncIteration
        return bytes(chunk)

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._response.close()
            self._response.release_conn()
