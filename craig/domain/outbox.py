"""Outbox relay decisions (pure): backoff after a failed publish, and per-aggregate order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Protocol, TypeVar

from craig.domain.constants import OUTBOX_BACKOFF_BASE, OUTBOX_BACKOFF_CAP


def capped_backoff(attempt: int, base: timedelta, cap: timedelta, jitter: float) -> timedelta:
    """``min(cap, base * 2**(attempt-1))`` scaled into ``[1/2, 1]`` by ``jitter`` in ``[0, 1]``.

    "Equal jitter": never less than half the nominal delay, so a poison event cannot hot-loop,
    and never more than the cap. ``attempt`` counts from 1.
    """
    if attempt < 1:
        raise ValueError("attempt counts from 1")
    if not 0.0 <= jitter <= 1.0:
        raise ValueError("jitter lies in [0, 1]")
    nominal = min(cap.total_seconds(), base.total_seconds() * 2.0 ** min(attempt - 1, 64))
    return timedelta(seconds=nominal / 2 + nominal / 2 * jitter)


def publish_backoff(attempts_so_far: int, jitter: float) -> timedelta:
    """Delay before the next publish of an event that has now failed ``attempts_so_far`` times."""
    return capped_backoff(attempts_so_far, OUTBOX_BACKOFF_BASE, OUTBOX_BACKOFF_CAP, jitter)


class Sequenced(Protocol):
    @property
    def seq(self) -> int: ...

    @property
    def aggregate(self) -> tuple[str, str]: ...


S = TypeVar("S", bound=Sequenced)


def publishable_in_order(batch: Iterable[S], oldest_outside: Mapping[tuple[str, str], int]) -> list[S]:
    """Events of ``batch`` that may be published now without breaking per-aggregate order.

    ``oldest_outside`` maps an aggregate to the ``seq`` of its oldest unpublished event that is
    *not* in the batch (locked by another relay, or waiting out a backoff). Anything younger
    than that must wait; older events, and events of other aggregates, go now.
    """
    ordered = sorted(batch, key=lambda event: event.seq)
    return [
        event
        for event in ordered
        if event.aggregate not in oldest_outside or event.seq < oldest_outside[event.aggregate]
    ]
