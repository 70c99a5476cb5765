"""Ports of the idempotency layer: the slot store, and the in-transaction finalizer."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

import attrs

from craig.domain.idempotency import ClaimRequest, Slot, StoredResponse


@attrs.frozen
class Claimed:
    """This request owns the slot (fresh, failed-and-retried, or recovered from a dead owner)."""

    slot: Slot


@attrs.frozen
class Existing:
    """Another request got there first; ``slot`` is its row and ``now`` the database clock."""

    slot: Slot
    now: datetime


ClaimOutcome = Claimed | Existing


@attrs.frozen
class IdempotencyStats:
    by_status: dict[str, int]
    oldest_processing_started_at: datetime | None
    now: datetime


class IdempotencyStore(Protocol):
    """Slot operations that run in their own short transactions, on the database clock.

    ``try_claim`` is atomic: of any number of concurrent calls for one ``cache_key``, exactly
    one returns :class:`Claimed` (per claim generation). It claims a missing slot, and
    re-claims a ``failed`` slot or a ``processing`` slot whose ``claim_expires_at`` has passed,
    but only when the fingerprint matches; each (re)claim bumps ``claim_token``. A new slot
    takes ``request.slot_id``; a re-claim keeps the slot's ``slot_id``, so it names the slot
    from its INSERT until it is purged.
    """

    async def try_claim(self, request: ClaimRequest, ttl: timedelta) -> ClaimOutcome: ...

    async def extend_claim(self, cache_key: str, token: int, ttl: timedelta) -> bool:
        """The owner's heartbeat: set ``claim_expires_at`` to ``now + ttl`` (database clock),
        only while ``token`` is the slot's current token and the slot is ``processing``.

        False when the claim is no longer this owner's (re-claimed by another request,
        finalized, or purged); nothing changes then. An owner calls it well within every TTL
        while its handler runs, so that only the claim of an owner that died expires.
        """
        ...

    async def get(self, cache_key: str) -> tuple[Slot | None, datetime]:
        """The slot (or None) and the database clock's now."""
        ...

    async def finalize_failed(self, cache_key: str, token: int, detail: str) -> bool:
        """Mark a claim ``failed`` so the same key may be retried; False if the token is stale."""
        ...

    async def wait_for_change(self, cache_key: str, timeout: timedelta) -> None:
        """Return when the slot may have changed (a finalize was committed) or after ``timeout``.

        Wake-ups may be spurious; callers re-read the slot.
        """
        ...

    async def purge(self, older_than: timedelta, batch_size: int) -> int:
        """Delete finished (and long-dead) slots started before ``now - older_than``; one batch."""
        ...

    async def stats(self) -> IdempotencyStats:
        """Slots by status (statuses without slots left out). ``processing`` is exact; finished
        slots are exact up to ``STATS_EXACT_COUNT_MAX_ROWS`` and may be an estimate above it."""
        ...


class IdempotencySlots(Protocol):
    """The finalize that must commit atomically with the handler's effects (``uow.idempotency``).

    The response body is stored only through the field cipher, bound to the slot's cache key
    (nothing is stored for an empty body or ``body_too_large``); the store decrypts it when it
    reads the slot, raising :class:`craig.ports.errors.UndecryptableData` when it cannot."""

    async def finalize_succeeded(self, cache_key: str, token: int, response: StoredResponse) -> None:
        """Store the response inside the unit of work's transaction.

        Raises :class:`craig.domain.idempotency.ClaimLost` when ``token`` is no longer the slot's
        current claim; the caller must then roll the whole transaction back. Waiters are woken
        when the transaction commits.
        """
        ...


# --- what a unit of work offers, for the use cases that name it -------------------------


class HasIdempotencySlots(Protocol):
    """A unit of work with ``idempotency`` (a :class:`IdempotencySlots` on its transaction)."""

    @property
    def idempotency(self) -> IdempotencySlots: ...
