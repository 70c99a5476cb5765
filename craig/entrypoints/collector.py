"""The garbage collector of a process that serves requests, tuned for request traffic.

CPython collects its youngest generation after every 700 net container allocations, and every
tenth young collection scans the next generation too. A request makes some thousand short-lived
objects (dicts, tuples, coroutines), so under load that is hundreds of collections a second,
and the older generations hold everything the process made at startup (the app, its OpenAPI
document, the container), scanned again and again though none of it is ever garbage.

:func:`tuned_for_serving` runs around a serving process's life, once it has started: one full
collection, then ``gc.freeze()`` moves every object alive at that point out of the collector's
sight for good, and the youngest generation is collected every
:data:`~craig.domain.constants.SERVING_GC_YOUNG_THRESHOLD` allocations. Cyclic garbage made
after startup is still collected, and reference counting frees everything else at once, as
before; an object made before and left in a cycle later (a pooled connection closed after
idling) stays until the process ends, a few of them at most. Only ``craig serve``
(and each of its ``--workers`` children) does this: a worker or a command keeps the defaults.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from craig.domain.constants import SERVING_GC_YOUNG_THRESHOLD


@asynccontextmanager
async def tuned_for_serving(_app: Any = None) -> AsyncIterator[None]:
    """A lifespan: enter it last, when everything the process keeps has been made."""
    before = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(SERVING_GC_YOUNG_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
