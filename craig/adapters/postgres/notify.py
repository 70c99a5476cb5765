"""LISTEN/NOTIFY for waiters: one dedicated connection per process, fanned out in memory.

Waiters register (channel, key) and are woken when a NOTIFY with that payload arrives. If the
listening connection is lost, every waiter is woken (they re-read and fall back to polling)
and the listener reconnects with backoff. A wake-up is a hint, never a guarantee: callers always
re-read the database.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Any

import asyncpg
import structlog

from craig.adapters.postgres.database import libpq_dsn
from craig.adapters.waiters import Waiters
from craig.domain.constants import LISTEN_RECONNECT_DELAY_MAX, LISTEN_RECONNECT_DELAY_MIN

log = structlog.get_logger(__name__)


class PostgresListener:
    def __init__(self, url: str, channels: tuple[str, ...]) -> None:
        self._dsn = libpq_dsn(url)
        self._channels = channels
        self._waiters = Waiters()
        self._conn: asyncpg.Connection | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="pg-listener")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._conn is not None and not self._conn.is_closed():
            with contextlib.suppress(Exception):
                await self._conn.close()
        self._conn = None

    async def _run(self) -> None:
        delay = LISTEN_RECONNECT_DELAY_MIN.total_seconds()
        while True:
            lost = asyncio.Event()
            try:
                conn = await asyncpg.connect(self._dsn)
                conn.add_termination_listener(lambda _c, lost=lost: lost.set())
                for channel in self._channels:
                    await conn.add_listener(channel, self._on_notify)
                self._conn = conn
                self._waiters.notify_all()  # anything missed while disconnected
                delay = LISTEN_RECONNECT_DELAY_MIN.total_seconds()
                await lost.wait()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # reconnect on any failure
                log.warning("pg listener disconnected", error=str(error), retry_in=delay)
            finally:
                self._conn = None
            self._waiters.notify_all()
            await asyncio.sleep(delay)
            delay = min(delay * 2, LISTEN_RECONNECT_DELAY_MAX.total_seconds())

    def _on_notify(self, _conn: Any, _pid: int, channel: str, payload: str) -> None:
        self._waiters.notify(channel, payload)

    async def wait(self, channel: str, key: str, timeout: timedelta) -> None:
        await self._waiters.wait(channel, key, timeout)

    def subscribe(self, channel: str, key: str = "") -> asyncio.Event:
        """See :meth:`Waiters.subscribe`; also set whenever the listening connection is lost."""
        return self._waiters.subscribe(channel, key)
