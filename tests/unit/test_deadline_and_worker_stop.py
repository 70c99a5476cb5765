"""Deadlines that hold when what they cancel does not stop at once: :func:`within` (the
readiness checks, the metrics refreshes) and a stopping worker's loops. Before, both waited for
the cancelled work to finish, and work blocked in a shielded clean-up (a connection given back
to a database that stopped answering) held a probe, a scrape or a worker's exit indefinitely."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from craig.entrypoints import deadline
from craig.entrypoints.deadline import within
from craig.entrypoints.workers import runner
from craig.entrypoints.workers.loop import Loop

pytestmark = pytest.mark.unit


def _stubborn(cleanup_done: asyncio.Event, cancelled: list[int]) -> Any:
    """Work that, once cancelled, waits for ``cleanup_done`` before it ends."""

    async def work() -> bool:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(1)
            await asyncio.shield(cleanup_done.wait())
            raise
        return False

    return work


async def _guarded(awaitable: Any) -> asyncio.Task[Any]:
    """Run ``awaitable``; a guard against hanging the suite, not a measurement."""
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=60)
    assert task in done, "still waiting for the cancelled work"
    return task


async def test_within_answers_at_its_deadline_and_lets_the_cancelled_work_wind_down() -> None:
    cleanup_done, cancelled = asyncio.Event(), []
    before = deadline.winding_down()
    finished = await _guarded(within(0.05, _stubborn(cleanup_done, cancelled)()))
    with pytest.raises(TimeoutError, match=r"no answer within 0\.05 s"):
        finished.result()
    await asyncio.sleep(0)
    assert cancelled == [1] and deadline.winding_down() == before + 1  # told to stop, still unwinding
    cleanup_done.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert deadline.winding_down() == before


async def test_within_passes_results_and_errors_through_and_a_cancelled_caller_cancels_the_work() -> None:
    async def answer() -> int:
        return 42

    async def fails() -> None:
        raise LookupError("down")

    assert await within(1, answer()) == 42
    with pytest.raises(LookupError, match="down"):
        await within(1, fails())
    cleanup_done, cancelled = asyncio.Event(), []
    caller = asyncio.create_task(within(30, _stubborn(cleanup_done, cancelled)()))
    await asyncio.sleep(0.01)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await asyncio.sleep(0)
    assert cancelled == [1]
    cleanup_done.set()


async def test_a_stopping_worker_does_not_wait_without_end_for_a_loop_that_will_not_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner, "WORKER_STOP_TIMEOUT", timedelta(seconds=0.05))
    monkeypatch.setattr(runner, "WORKER_CANCEL_GRACE", timedelta(seconds=0.05))
    cleanup_done, cancelled = asyncio.Event(), []
    stubborn = Loop("stubborn", _stubborn(cleanup_done, cancelled), timedelta(seconds=1))

    async def run_and_stop() -> None:
        async with runner._loops_running(object(), [stubborn]):  # type: ignore[arg-type]
            await asyncio.sleep(0.01)

    (await _guarded(run_and_stop())).result()
    assert cancelled == [1] and not cleanup_done.is_set()
    cleanup_done.set()
