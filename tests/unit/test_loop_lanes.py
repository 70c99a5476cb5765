"""A loop with several lanes runs that many passes at once, each lane idling by itself."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest

from craig.entrypoints import metrics
from craig.entrypoints.workers import loop as loop_module
from craig.entrypoints.workers.loop import Loop

pytestmark = pytest.mark.unit


async def test_two_lanes_run_two_passes_at_once_and_stop_together() -> None:
    running, most = 0, 0
    both_in = asyncio.Event()

    async def one_pass() -> bool:
        nonlocal running, most
        running += 1
        most = max(most, running)
        if running == 2:
            both_in.set()
        await asyncio.wait_for(both_in.wait(), 5)  # a lane alone would wait here in vain
        running -= 1
        return False

    stop = asyncio.Event()
    loop = Loop("lanes-test", one_pass, timedelta(seconds=60), lanes=2)
    task = asyncio.create_task(loop.run(stop))
    await asyncio.wait_for(both_in.wait(), 5)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert most == 2


async def test_one_lane_runs_one_pass_at_a_time() -> None:
    running, most, passes = 0, 0, 0
    stop = asyncio.Event()

    async def one_pass() -> bool:
        nonlocal running, most, passes
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01)
        running -= 1
        passes += 1
        if passes == 5:
            stop.set()
        return True

    await asyncio.wait_for(Loop("one-lane-test", one_pass, timedelta(seconds=60)).run(stop), 5)
    assert most == 1 and passes == 5


async def test_a_stuck_lane_keeps_the_loop_late_though_the_other_passes() -> None:
    stuck = asyncio.Event()
    calls = 0

    async def one_pass() -> bool:
        nonlocal calls
        calls += 1
        if calls == 1:
            await stuck.wait()  # the first lane never finishes a pass
        await asyncio.sleep(0.001)
        return True

    stop = asyncio.Event()
    loop = Loop("stuck-lane-test", one_pass, timedelta(seconds=60), lanes=2)
    task = asyncio.create_task(loop.run(stop))
    await asyncio.sleep(0.1)
    assert calls > 10  # the other lane kept passing
    assert "stuck-lane-test" not in loop_module.LAST_PASSES  # yet the loop has not passed as a whole
    stuck.set()
    await asyncio.sleep(0.05)
    assert "stuck-lane-test" in loop_module.LAST_PASSES
    stuck_since = loop_module.LAST_PASSES["stuck-lane-test"]
    stuck.clear()
    calls = 0  # the next pass of one lane sticks again, while the other keeps passing
    await asyncio.sleep(0.1)
    assert calls > 10
    # The loop still reads as late as its stuck lane, to the health check and to the metric alike.
    assert loop_module.LAST_PASSES["stuck-lane-test"] <= stuck_since + 0.01
    gauge = metrics.REGISTRY.get_sample_value(
        "craig_worker_loop_last_pass_timestamp_seconds", {"loop": "stuck-lane-test"}
    )
    assert gauge is not None and gauge <= time.time() - 0.08
    stuck.set()
    stop.set()
    await asyncio.wait_for(task, 5)
