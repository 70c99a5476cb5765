"""The inbox retry policy, pure.

A failed delivery is retried after ``base * 2**(n-1)`` (1 s, 2 s, 4 s, ... capped at 60 s) with
equal jitter; after ``INBOX_MAX_RETRIES`` failed retries — or at once for a non-retryable
error — the message goes to the dead-letter exchange.
"""

from __future__ import annotations

from datetime import timedelta

import attrs

from craig.domain.constants import INBOX_BACKOFF_BASE, INBOX_BACKOFF_CAP, INBOX_MAX_RETRIES
from craig.domain.outbox import capped_backoff


@attrs.frozen
class RetryPolicy:
    """Backoff of redeliveries; tests shrink ``base``/``cap`` so retries take milliseconds."""

    base: timedelta = INBOX_BACKOFF_BASE
    cap: timedelta = INBOX_BACKOFF_CAP
    max_retries: int = INBOX_MAX_RETRIES


@attrs.frozen
class RetryLater:
    """Deliver again after ``delay``; this will be retry number ``retry_count``."""

    delay: timedelta
    retry_count: int


@attrs.frozen
class DeadLetter:
    """Give up: publish to the DLX; ``retry_count`` retries were made."""

    retry_count: int


FailureDecision = RetryLater | DeadLetter


def after_failure(
    failures: int, *, retryable: bool, jitter: float, policy: RetryPolicy = RetryPolicy()
) -> FailureDecision:
    """Decide after the ``failures``-th failed attempt of one message (counting from 1)."""
    if failures < 1:
        raise ValueError("failures counts from 1")
    retries_made = failures - 1
    if not retryable or retries_made >= policy.max_retries:
        return DeadLetter(retry_count=retries_made)
    return RetryLater(delay=capped_backoff(failures, policy.base, policy.cap, jitter), retry_count=failures)
