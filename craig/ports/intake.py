"""Ports: public intake referrals."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol
from uuid import UUID

from craig.domain.intake import Referral
from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.screening import QueueBacklog, ReferralQuery, ResponseTimes


class ReferralRepository(Protocol):
    """``uow.referrals``. Every method runs in the unit of work's transaction; the caller commits.

    The reporter's name, phone and e-mail, the child's details, the concern and the location are
    stored only through ``uow.cipher`` (:mod:`craig.ports.cipher`): no plaintext of them reaches a
    table. Reading a row whose ciphertext was tampered with raises ``ValueError``.
    """

    async def add(self, referral: Referral) -> None:
        """Insert; a duplicate id or reference raises ``ConstraintViolation``."""
        ...

    async def get(self, referral_id: UUID) -> Referral | None:
        """The referral, decrypted, or None."""
        ...

    async def get_for_update(self, referral_id: UUID) -> Referral | None:
        """``SELECT … FOR UPDATE``: the referral, locked until the transaction ends, or None.
        Concurrent screenings of one referral run one after the other."""
        ...

    async def save_screening(self, referral: Referral) -> None:
        """Store the status, screening, reason, case and version of a referral this
        transaction locked."""
        ...

    async def queue(self, query: ReferralQuery, keyset: Keyset) -> KeysetPage[Referral]:
        """The referrals ``query`` selects, most urgent first, oldest first within a priority
        (:func:`craig.domain.screening.queue_key`), after ``keyset.after``."""
        ...

    async def backlog(self, times: ResponseTimes, now: datetime) -> Sequence[QueueBacklog]:
        """Unscreened referrals per priority (every priority, unscored last, zero counts included),
        read from the index of unscreened referrals only, never the screened history."""
        ...


# --- what a unit of work offers, for the use cases that name it -------------------------


class HasReferrals(Protocol):
    """A unit of work with ``referrals`` (a :class:`ReferralRepository` on its transaction)."""

    @property
    def referrals(self) -> ReferralRepository: ...
