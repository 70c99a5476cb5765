"""The send-job worker's tunables: lease, attempts, concurrency, prefetch, rate waits, backoff."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta

import attrs

from craig.domain.constants import (
    SEND_BACKOFF_SCHEDULE,
    SEND_DISPATCH_DEADLINE_MARGIN,
    SEND_LEASE,
    SEND_MAX_ATTEMPTS,
    SEND_MAX_CONCURRENCY,
    SEND_MAX_RATE_WAIT,
    SEND_RECOVER_BATCH,
    SEND_RECOVER_INTERVAL,
    SEND_WAKE_LINGER,
)

#: ``observer(outcome, seconds)``: outcome is sent, retry, failed, deferred or lost.
Observer = Callable[[str, float], None]


@attrs.frozen
class SendPolicy:
    lease: timedelta = SEND_LEASE
    max_attempts: int = SEND_MAX_ATTEMPTS
    max_concurrency: int = SEND_MAX_CONCURRENCY
    #: Jobs claimed ahead of free dispatch slots, so each pass claims a whole batch while the
    #: previous one is sent. A prefetched job that waits past half its dispatch deadline is
    #: given back unsent. 0 claims only for free slots.
    prefetch: int = SEND_MAX_CONCURRENCY
    #: A claimed job whose rate-limit slot is further away is given back (``defer``).
    max_rate_wait: timedelta = SEND_MAX_RATE_WAIT
    recover_interval: timedelta = SEND_RECOVER_INTERVAL
    #: An idle worker woken by NOTIFY waits this long before it claims (see ``wait_for_jobs``).
    wake_linger: timedelta = SEND_WAKE_LINGER
    recover_batch: int = SEND_RECOVER_BATCH
    #: The default retry schedule; tests pass a faster one.
    backoff: Sequence[timedelta] = SEND_BACKOFF_SCHEDULE

    @property
    def claim_batch(self) -> int:
        """A pass waits until this many jobs fit in (running + ready), unless all are idle."""
        return max(1, (self.max_concurrency + self.prefetch) // 2)

    @property
    def dispatch_deadline(self) -> timedelta:
        """A dispatch (token, rate wait, POST, one 401 retry) is abandoned after this."""
        return self.lease - min(SEND_DISPATCH_DEADLINE_MARGIN, self.lease / 10)
