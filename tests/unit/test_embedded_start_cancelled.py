"""A start of the embedded PostgreSQL that is cancelled (a worker told to stop while it starts)
or fails after the server came up stops the server it started. The thread that starts it cannot
be interrupted: before, a cancelled start left the server running after the process exited, and
the next process found it running, reused it, and never stopped it either."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from craig.entrypoints.profiles.lifecycle import EmbeddedServer
from craig.entrypoints.runtime import StartupError

pytestmark = pytest.mark.unit


class SlowServer:
    """Stands in for ``EmbeddedPostgres``: ``start`` blocks its thread until released."""

    def __init__(self, *, database_fails: bool = False) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.started_here = False
        self.stopped = 0
        self.database_fails = database_fails

    def start(self) -> None:
        self.entered.set()
        self.release.wait(30)
        self.started_here = True

    def ensure_database(self, name: str) -> None:
        if self.database_fails:
            raise RuntimeError("database craig could not be made")

    def stop_if_started_here(self) -> None:
        if self.started_here:
            self.stopped += 1
            self.started_here = False


def _embedded(server: SlowServer) -> EmbeddedServer:
    fake: Any = server
    return EmbeddedServer(fake, "craig", Path("/nowhere"))


async def test_a_cancelled_start_waits_for_the_server_and_stops_it() -> None:
    server = SlowServer()
    starting = asyncio.create_task(_embedded(server).start())
    while not server.entered.is_set():
        await asyncio.sleep(0.005)
    starting.cancel()
    await asyncio.sleep(0.05)
    assert not starting.done()  # it waits for the thread, which is still starting the server
    server.release.set()
    with pytest.raises(asyncio.CancelledError):
        await starting
    assert (server.started_here, server.stopped) == (False, 1)


async def test_a_start_that_fails_after_the_server_came_up_stops_it() -> None:
    server = SlowServer(database_fails=True)
    server.release.set()
    with pytest.raises(StartupError, match="database craig could not be made"):
        await _embedded(server).start()
    assert (server.started_here, server.stopped) == (False, 1)


async def test_a_start_that_succeeds_leaves_the_server_running() -> None:
    server = SlowServer()
    server.release.set()
    await _embedded(server).start()
    assert (server.started_here, server.stopped) == (True, 0)
