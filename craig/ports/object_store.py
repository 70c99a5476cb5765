"""Object store port: where attachment blobs live (memory, local filesystem, S3/MinIO)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from datetime import datetime
from typing import Protocol

import attrs

from craig.domain.constants import OBJECT_KEY_MAX_BYTES


@attrs.frozen
class StoredObject:
    key: str
    size: int
    last_modified: datetime


@attrs.frozen(eq=False)
class Download:
    """An opened object: ``chunks`` yields its bytes; close it (``aclose``) if not read to the end."""

    size: int
    chunks: AsyncIterator[bytes]

    async def aclose(self) -> None:
        aclose = getattr(self.chunks, "aclose", None)
        if aclose is not None:
            await aclose()


class InvalidObjectKey(ValueError):
    """A key outside the contract of :func:`check_key`: a programming error, never user input."""


def check_key(key: str) -> str:
    """Keys are relative ``/``-separated paths: no empty, ``.`` or ``..`` segment, no leading
    ``/``, no NUL, at most 1024 UTF-8 bytes. Every adapter refuses other keys the same way."""
    segments = key.split("/")
    if (
        not key
        or len(key.encode("utf-8", errors="replace")) > OBJECT_KEY_MAX_BYTES
        or "\x00" in key
        or any(segment in ("", ".", "..") for segment in segments)
    ):
        raise InvalidObjectKey(f"invalid object key {key!r}")
    return key


class ObjectStore(Protocol):
    """Blobs by key. Every method may raise :class:`craig.ports.errors.ObjectStoreUnavailable`
    when the store cannot be reached or fails; no driver error ever escapes.

    * ``put`` is atomic: a reader sees the whole object or none of it (never a prefix), and a
      second put of a key replaces it whole.
    * A missing key is not an error: ``head``/``open`` answer None and ``delete`` does nothing.
    * ``list`` yields the objects whose key starts with ``prefix``, in ascending key order
      (Unicode code point order, which is UTF-8 byte order, as S3 lists), after ``start_after``.
    """

    async def prepare(self) -> None:
        """Make the store usable (create the bucket or directory when missing)."""
        ...

    async def put(self, key: str, data: bytes, content_type: str) -> None: ...

    async def open(self, key: str, chunk_size: int) -> Download | None:
        """The object as a stream of chunks of at most ``chunk_size`` bytes, or None."""
        ...

    async def head(self, key: str) -> int | None:
        """The object's size in bytes, or None when it does not exist."""
        ...

    async def delete(self, key: str) -> None: ...

    def list(self, prefix: str, start_after: str | None = None) -> AsyncGenerator[StoredObject, None]:
        """Objects under ``prefix`` with their size and last-modified time (the store's clock)."""
        ...

    async def ping(self) -> None:
        """Raise ``ObjectStoreUnavailable`` unless the store answers (the readiness check)."""
        ...
