"""Retrying a whole transaction after a deadlock or serialization failure.

PostgreSQL may abort one of two transactions that wait on each other (``40P01``) or that
cannot be serialized (``40001``); the adapters raise :class:`TransientConflict`, and the whole
transaction may simply run again. Each attempt must be a fresh ``async with uow:`` block.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

import attrs

from craig.domain.constants import PLACEMENT_RETRY_BACKOFF, PLACEMENT_TRANSACTION_MAX_ATTEMPTS
from craig.ports.errors import TransientConflict

T = TypeVar("T")


@attrs.frozen
class TransientRetry:
    """How often, and after what pause, a transaction that hit a :class:`TransientConflict` runs
    again. Not the inbox's redelivery policy (:class:`craig.domain.inbox.RetryPolicy`): that one
    spaces deliveries of a message over seconds to minutes; this one reruns one transaction
    within the request, a few milliseconds apart."""

    max_attempts: int = PLACEMENT_TRANSACTION_MAX_ATTEMPTS
    backoff: timedelta = PLACEMENT_RETRY_BACKOFF

    def __attrs_post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts counts from 1")

    def pause(self, failed_attempts: int, jitter: float) -> float:
        """Seconds to wait after ``failed_attempts`` failures; ``jitter`` in [0, 1] spreads the
        retries of transactions that collided so they do not collide again in step."""
        nominal = self.backoff.total_seconds() * failed_attempts
        return nominal / 2 + nominal / 2 * jitter


async def retry_transient(
    attempt: Callable[[], Awaitable[T]],
    policy: TransientRetry,
    *,
    on_retry: Callable[[int, TransientConflict], None] | None = None,
) -> T:
    """Run ``attempt`` until it returns, at most ``policy.max_attempts`` times.

    Only :class:`TransientConflict` is retried; the last one propagates (the HTTP layer answers
    409 ``concurrent-update``). Every other error propagates at once."""
    failures = 0
    while True:
        try:
            return await attempt()
        except TransientConflict as error:
            failures += 1
            if failures >= policy.max_attempts:
                raise
            if on_retry is not None:
                on_retry(failures, error)
            await asyncio.sleep(policy.pause(failures, random.random()))
