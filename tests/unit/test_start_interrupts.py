"""``StartInterrupts``: SIGTERM during a start cancels it (once: a second signal is ignored
while the start unwinds), and the handlers found on the way in are back on the way out, so a
signal after the start reaches what handled it before (root's SIGTERM handler, the runner's
Ctrl-C), not the default action that kills the process where it stands."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest

from craig.entrypoints.cli.common import StartInterrupts

pytestmark = pytest.mark.unit


async def test_a_signal_cancels_the_start_which_unwinds_and_the_handlers_before_are_back() -> None:
    def before(_signum: int, _frame: Any) -> None:
        raise AssertionError("the handler from before ran during the start")

    previous = signal.signal(signal.SIGTERM, before)
    unwound: list[str] = []

    @asynccontextmanager
    async def opened() -> AsyncIterator[None]:
        try:
            yield
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # a second signal while unwinding: ignored
            await asyncio.sleep(0.05)
            unwound.append("closed")

    try:
        interrupts = StartInterrupts()
        async with AsyncExitStack() as stack:
            async with interrupts:
                try:
                    await stack.enter_async_context(opened())
                    os.kill(os.getpid(), signal.SIGTERM)
                    await asyncio.sleep(5)  # the start, held: the signal ends it
                    raise AssertionError("the signal did not cancel the start")
                except asyncio.CancelledError:
                    assert await interrupts.unwound(stack)
            assert interrupts.stopped() and unwound == ["closed"]
        assert signal.getsignal(signal.SIGTERM) is before
    finally:
        signal.signal(signal.SIGTERM, previous)


async def test_a_start_no_signal_ends_leaves_nothing_behind() -> None:
    previous = signal.getsignal(signal.SIGINT)
    interrupts = StartInterrupts()
    async with interrupts:
        await asyncio.sleep(0)
    assert not interrupts.asked and not interrupts.stopped()
    assert signal.getsignal(signal.SIGINT) is previous
