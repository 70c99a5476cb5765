"""The memory object store: blobs in a dict (the ``memory`` profile and the unit tests)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import attrs

from craig.adapters.clock import SystemClock
from craig.ports.errors import ObjectStoreUnavailable
from craig.ports.object_store import Download, ObjectStore, StoredObject, check_key


@attrs.frozen
class _Blob:
    data: bytes
    content_type: str
    stored: StoredObject


class MemoryObjectStore(ObjectStore):
    def __init__(self, clock: Any | None = None) -> None:
        self.clock = clock or SystemClock()
        self._blobs: dict[str, _Blob] = {}
        self.available = True  # tests flip this to simulate an outage

    def _check(self) -> None:
        if not self.available:
            raise ObjectStoreUnavailable("memory object store switched off")

    async def prepare(self) -> None:
        self._check()

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        check_key(key)
        self._check()
        stored = StoredObject(key=key, size=len(data), last_modified=self.clock.now())
        self._blobs[key] = _Blob(bytes(data), content_type, stored)

    async def open(self, key: str, chunk_size: int) -> Download | None:
        check_key(key)
        self._check()
        blob = self._blobs.get(key)
        if blob is None:
            return None
        return Download(size=len(blob.data), chunks=_chunks(blob.data, chunk_size))

    async def head(self, key: str) -> int | None:
        check_key(key)
        self._check()
        blob = self._blobs.get(key)
        return None if blob is None else blob.stored.size

    async def delete(self, key: str) -> None:
        check_key(key)
        self._check()
        self._blobs.pop(key, None)

    async def list(self, prefix: str, start_after: str | None = None) -> AsyncGenerator[StoredObject, None]:
        self._check()
        for key in sorted(k for k in self._blobs if k.startswith(prefix)):
            if start_after is not None and key <= start_after:
                continue
            blob = self._blobs.get(key)
            if blob is not None:
                yield blob.stored

    async def ping(self) -> None:
        self._check()

    def content_type(self, key: str) -> str | None:
        """The type given at ``put`` (for tests and diagnostics)."""
        blob = self._blobs.get(key)
        return None if blob is None else blob.content_type


async def _chunks(data: bytes, chunk_size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(data), chunk_size):
        yield data[start : start + chunk_size]
