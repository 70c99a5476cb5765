"""Waiting at most so long for something that may not stop when told to.

``asyncio.wait_for`` cancels what runs out of time and then waits for it to finish, and a
cancelled task may take as long as it likes: one blocked in a shielded clean-up (a database
connection given back to its pool waits for the server to acknowledge a cancelled statement)
kept a readiness probe or a metrics scrape waiting long after its timeout. :func:`within`
answers at the deadline and lets what it cancelled wind down in the background.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")

#: Cancelled tasks still winding down: referenced so they are not collected half-way.
_WINDING_DOWN: set[asyncio.Future[Any]] = set()


async def within(seconds: float, work: Awaitable[T]) -> T:
    """``work``'s result, or ``TimeoutError`` after ``seconds``; on the timeout (or when the
    caller is cancelled) ``work`` is cancelled and not waited for."""
    task = asyncio.ensure_future(work)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except asyncio.CancelledError:
        _wind_down(task)
        raise
    if task in done:
        return task.result()
    _wind_down(task)
    raise TimeoutError(f"no answer within {seconds:g} s")


def winding_down() -> int:
    """How many cancelled tasks have not finished yet (tests)."""
    return len(_WINDING_DOWN)


def _wind_down(task: asyncio.Future[Any]) -> None:
    task.cancel()
    _WINDING_DOWN.add(task)
    task.add_done_callback(_finished)


def _finished(task: asyncio.Future[Any]) -> None:
    _WINDING_DOWN.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: its error was answered as the timeout already
