"""The S3 object store (MinIO SDK; any S3 endpoint: MinIO, SeaweedFS, AWS).

The SDK is blocking, so every call runs in a worker thread (``asyncio.to_thread``). Its errors
become :class:`ObjectStoreUnavailable`; a missing key (``NoSuchKey``) is an answer, not an error.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncGenerator, Callable, Iterator
from itertools import islice
from typing import Any, TypeVar

import urllib3
from minio import Minio
from minio.error import MinioException, S3Error

from craig.domain.constants import (
    OBJECT_STORE_CONNECT_TIMEOUT,
    OBJECT_STORE_LIST_PAGE_KEYS,
    OBJECT_STORE_MAX_CONNECTIONS,
    OBJECT_STORE_READ_TIMEOUT,
    OBJECT_STORE_RETRIES,
    OBJECT_STORE_RETRY_BACKOFF,
)
from craig.ports.errors import ObjectStoreUnavailable
from craig.ports.object_store import Download, ObjectStore, StoredObject, check_key

T = TypeVar("T")
_MISSING_CODES = frozenset({"NoSuchKey", "NoSuchObject", "ResourceNotFound", "NotFound"})
# ValueError: the SDK validates arguments such as the bucket name (a configuration error).
_FAILURES = (MinioException, urllib3.exceptions.HTTPError, OSError, ValueError)


def _missing(error: S3Error) -> bool:
    return error.code in _MISSING_CODES


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
    ) -> None:
        self.endpoint = endpoint
        self.bucket = bucket
        http = urllib3.PoolManager(
            timeout=urllib3.Timeout(
                connect=OBJECT_STORE_CONNECT_TIMEOUT.total_seconds(),
                read=OBJECT_STORE_READ_TIMEOUT.total_seconds(),
            ),
            retries=urllib3.Retry(
                total=OBJECT_STORE_RETRIES,
                backoff_factor=OBJECT_STORE_RETRY_BACKOFF.total_seconds(),
                status_forcelist=[500, 502, 503, 504],
            ),
            maxsize=OBJECT_STORE_MAX_CONNECTIONS,
        )
        self.client = Minio(
            endpoint,
            access_key=access_key,
            secret_key=secret_key,
            secure=secure,
            region=region or None,
            http_client=http,
        )

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except _FAILURES as error:
            raise ObjectStoreUnavailable(f"S3 {self.endpoint}: {type(error).__name__}: {error}") from error

    async def prepare(self) -> None:
        if await self._call(self.client.bucket_exists, self.bucket):
            return
        try:
            await self._call(self.client.make_bucket, self.bucket)
        except ObjectStoreUnavailable as error:
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
        )

    async def open(self, key: str, chunk_size: int) -> Download | None:
        check_key(key)
        try:
            response = await self._call(self.client.get_object, self.bucket, key)
        except ObjectStoreUnavailable as error:
            if isinstance(error.__cause__, S3Error) and _missing(error.__cause__):
                return None
            raise
        size = int(response.headers.get("Content-Length", "0"))
        return Download(size=size, chunks=_ResponseChunks(self, response, chunk_size))

    async def head(self, key: str) -> int | None:
        check_key(key)
        try:
            stat = await self._call(self.client.stat_object, self.bucket, key)
        except ObjectStoreUnavailable as error:
            if isinstance(error.__cause__, S3Error) and _missing(error.__cause__):
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
        if not await self._call(self.client.bucket_exists, self.bucket):
            raise ObjectStoreUnavailable(f"S3 {self.endpoint}: bucket {self.bucket!r} does not exist")

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
