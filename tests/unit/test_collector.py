"""A serving process's collector: startup's objects frozen out of every collection, the young
generation collected less often, cyclic garbage still collected, everything put back after.
Run in a fresh interpreter, so the test process's own collector is left alone."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.unit

PROGRAM = textwrap.dedent(
    """
    import asyncio, gc, weakref
    from craig.domain.constants import SERVING_GC_YOUNG_THRESHOLD
    from craig.entrypoints.collector import tuned_for_serving

    class Node:
        pass

    async def main():
        default = gc.get_threshold()
        async with tuned_for_serving():
            assert gc.get_threshold() == (SERVING_GC_YOUNG_THRESHOLD, *default[1:]), gc.get_threshold()
            assert gc.get_freeze_count() > 1000, gc.get_freeze_count()  # the modules, among others
            # a cycle reference counting cannot free: the collector still does, on its own
            first, second = Node(), Node()
            first.other, second.other = second, first
            gone = weakref.ref(first)
            del first, second
            kept = [[] for _ in range(2 * SERVING_GC_YOUNG_THRESHOLD)]  # what requests keep a while
            assert gone() is None, "the cycle was never collected"
            del kept
        assert gc.get_threshold() == default and gc.get_freeze_count() == 0
        print("ok")

    asyncio.run(main())
    """
)


def test_serving_collector_freezes_startup_and_still_collects_cycles() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
