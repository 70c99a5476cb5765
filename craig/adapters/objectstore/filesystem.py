"""The local-filesystem object store of the ``embedded`` profile.

Layout: ``<root>/data/<key>`` holds the objects; ``<root>/incoming`` holds files being written.
A put writes and fsyncs a temporary file, then renames it into place, so a reader (or a crash)
never sees half an object. A temporary file a crash left behind is deleted when the store is
next prepared (at start), once it is older than ``OBJECT_STORE_FILESYSTEM_STALE_INCOMING``: a
younger one may be another process's put in progress (``craig serve --workers``).

Keys map to nested directories, so one key may not be a "directory" of another (``a/b`` and
``a/b/c``); Craig's keys never are.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import heapq
import os
import tempfile
import time
from collections.abc import AsyncGenerator, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, TypeVar

from craig.domain.constants import (
    OBJECT_STORE_FILESYSTEM_PUT_ATTEMPTS,
    OBJECT_STORE_FILESYSTEM_STALE_INCOMING,
    OBJECT_STORE_LIST_PAGE_KEYS,
)
from craig.ports.errors import ObjectStoreUnavailable
from craig.ports.object_store import Download, ObjectStore, StoredObject, check_key

T = TypeVar("T")


async def _io(fn: Callable[..., T], *args: Any) -> T:
    try:
        return await asyncio.to_thread(fn, *args)
    except OSError as error:
        raise ObjectStoreUnavailable(f"{type(error).__name__}: {error}") from error


class _FileChunks:
    """Async chunks of an open file; closing is idempotent and happens at the end at the latest."""

    def __init__(self, file: IO[bytes], chunk_size: int) -> None:
        self._file = file
        self._chunk_size = chunk_size

    def __aiter__(self) -> _FileChunks:
        return self

    async def __anext__(self) -> bytes:
        if self._file.closed:
            raise StopAsyncIteration
        chunk = await _io(self._file.read, self._chunk_size)
        if not chunk:
            await self.aclose()
            raise StopAsyncIteration
        return chunk

    async def aclose(self) -> None:
        self._file.close()


class FilesystemObjectStore(ObjectStore):
    def __init__(self, root: Path | str, list_page_keys: int = OBJECT_STORE_LIST_PAGE_KEYS) -> None:
        self.root = Path(root)
        self._list_page_keys = list_page_keys
        self._data = self.root / "data"
        self._incoming = self.root / "incoming"

    def _path(self, key: str) -> Path:
        return self._data.joinpath(*check_key(key).split("/"))

    async def prepare(self) -> None:
        await _io(self._prepare)
        await _io(self._remove_stale_incoming)

    def _remove_stale_incoming(self) -> None:
        cutoff = time.time() - OBJECT_STORE_FILESYSTEM_STALE_INCOMING.total_seconds()
        with os.scandir(self._incoming) as entries:
            for entry in entries:
                with contextlib.suppress(FileNotFoundError):
                    if entry.name.startswith("put-") and entry.stat().st_mtime < cutoff:
                        os.unlink(entry.path)

    def _prepare(self) -> None:
        self._data.mkdir(parents=True, exist_ok=True)
        self._incoming.mkdir(parents=True, exist_ok=True)

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        await _io(self._put, self._path(key), data)

    def _put(self, path: Path, data: bytes) -> None:
        self._prepare()
        fd, temporary = tempfile.mkstemp(dir=self._incoming, prefix="put-")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            for attempt in range(OBJECT_STORE_FILESYSTEM_PUT_ATTEMPTS):
                path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.replace(temporary, path)
                    break
                except FileNotFoundError:
                    if attempt == OBJECT_STORE_FILESYSTEM_PUT_ATTEMPTS - 1:
                        raise
            _fsync_directory(path.parent)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)

    async def open(self, key: str, chunk_size: int) -> Download | None:
        path = self._path(key)

        def opened() -> tuple[IO[bytes], int] | None:
            self._check_root()
            try:
                file = path.open("rb")
            except (FileNotFoundError, NotADirectoryError):
                return None
            return file, os.fstat(file.fileno()).st_size

        found = await _io(opened)
        if found is None:
            return None
        file, size = found
        return Download(size=size, chunks=_FileChunks(file, chunk_size))

    async def head(self, key: str) -> int | None:
        path = self._path(key)

        def size() -> int | None:
            self._check_root()
            try:
                stat = path.stat()
            except (FileNotFoundError, NotADirectoryError):
                return None
            return stat.st_size if path.is_file() else None

        return await _io(size)

    async def delete(self, key: str) -> None:
        await _io(self._delete, self._path(key))

    def _delete(self, path: Path) -> None:
        try:
            path.unlink()
        except (FileNotFoundError, NotADirectoryError):
            return
        parent = path.parent
        while parent != self._data and parent.is_relative_to(self._data):
            try:
                parent.rmdir()  # only succeeds when empty
            except OSError:
                break
            parent = parent.parent

    async def list(self, prefix: str, start_after: str | None = None) -> AsyncGenerator[StoredObject, None]:
        """Page by page, as S3 lists: each page is read when the previous one is used up, and
        resumes after its last key, so objects put or deleted meanwhile show as they would there."""
        marker = start_after
        while True:
            page = await _io(self._page, prefix, marker, self._list_page_keys)
            for stored in page:
                yield stored
            if len(page) < self._list_page_keys:
                return
            marker = page[-1].key

    def _page(self, prefix: str, start_after: str | None, limit: int) -> builtins.list[StoredObject]:
        """Up to ``limit`` objects under ``prefix`` after ``start_after``, in key order: a walk of
        the directories in the order their keys sort, skipping every subtree that lies wholly at
        or before the marker, and stopping as soon as the page is full.

        A directory lists its entries in an order of the file system's own and cannot start at a
        name, so each directory the walk enters is read whole; of it, only the next entries that
        can still be on the page are kept (:func:`_next_entries`), never the whole directory."""
        parents = prefix.split("/")[:-1]
        found: builtins.list[StoredObject] = []

        def walk(directory: Path, key_prefix: str) -> bool:
            """False once the page is full."""
            walked: str | None = None  # the last entry of this directory walked so far
            while True:
                wanted = limit - len(found)
                try:
                    entries = _next_entries(directory, key_prefix, prefix, start_after, walked, wanted)
                except (FileNotFoundError, NotADirectoryError):
                    return True
                for key, path, is_dir in entries:
                    walked = key
                    if is_dir:
                        if not walk(path, key):
                            return False
                        continue
                    try:
                        stat = path.stat()
                    except (FileNotFoundError, NotADirectoryError):
                        continue
                    modified = datetime.fromtimestamp(stat.st_mtime, UTC)
                    found.append(StoredObject(key=key, size=stat.st_size, last_modified=modified))
                    if len(found) >= limit:
                        return False
                if len(entries) < wanted:
                    return True  # nothing more here; else some entries held no key: read on

        walk(self._data.joinpath(*parents), "".join(f"{part}/" for part in parents))
        return found

    def _check_root(self) -> None:
        if not self._data.is_dir() or not os.access(self._data, os.W_OK):
            raise ObjectStoreUnavailable(f"{self._data} is not a writable directory")

    async def ping(self) -> None:
        await _io(self._check_root)

    def __repr__(self) -> str:
        return f"FilesystemObjectStore({str(self.root)!r})"


def _next_entries(
    directory: Path, key_prefix: str, prefix: str, start_after: str | None, walked: str | None, count: int
) -> builtins.list[tuple[str, Path, bool]]:
    """The first ``count`` entries of ``directory`` in key order (a directory's key ends in "/",
    which orders it among files as its keys sort) that can hold keys under ``prefix`` after
    ``start_after`` and come after the entry ``walked``: read in one pass over the directory,
    keeping at most ``count`` of them (a heap), never the whole directory."""

    def candidates() -> Iterator[tuple[str, Path, bool]]:
        with os.scandir(directory) as scan:
            for entry in scan:
                is_dir = _is_directory(entry)
                if is_dir is None:
                    continue
                key = key_prefix + entry.name + ("/" if is_dir else "")
                if walked is not None and key <= walked:
                    continue
                if is_dir:
                    wanted = key.startswith(prefix) or prefix.startswith(key)
                    passed = start_after is not None and key <= start_after and not start_after.startswith(key)
                    if not wanted or passed:
                        continue
                elif not key.startswith(prefix) or (start_after is not None and key <= start_after):
                    continue
                yield key, Path(entry.path), is_dir

    return heapq.nsmallest(count, candidates(), key=lambda candidate: candidate[0])


def _is_directory(entry: os.DirEntry[str]) -> bool | None:
    """None for an entry that vanished while it was listed."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except FileNotFoundError:
        return None


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
