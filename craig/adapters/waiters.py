"""Tasks waiting on a (channel, key) and woken by a notification: NOTIFY, in memory."""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from datetime import timedelta


class Waiters:
    """Wake-ups are hints: a waiter may wake spuriously and always re-reads its state."""

    def __init__(self) -> None:
        self._waiting: defaultdict[tuple[str, str], set[asyncio.Event]] = defaultdict(set)

    def notify(self, channel: str, key: str = "") -> None:
        for event in self._waiting.get((channel, key), ()):
            event.set()

    def notify_all(self) -> None:
        for events in self._waiting.values():
            for event in events:
                event.set()

    def subscribe(self, channel: str, key: str = "") -> asyncio.Event:
        """A level-triggered wake-up: set by every notification for (channel, key) until its
        owner clears it, so one that arrives while the owner is busy is not missed."""
        event = asyncio.Event()
        self._waiting[(channel, key)].add(event)
        return event

    async def wait(self, channel: str, key: str, timeout: timedelta) -> None:
        """Return on a notification for (channel, key), or after ``timeout``."""
        event = asyncio.Event()
        waiting = self._waiting[(channel, key)]
        waiting.add(event)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout.total_seconds())
        finally:
            waiting.discard(event)
            if not waiting:
                self._waiting.pop((channel, key), None)
