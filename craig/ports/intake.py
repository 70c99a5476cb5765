"""Ports: public intake referrals."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.intake import Referral


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


# --- what a unit of work offers, for the use cases that name it -------------------------


class HasReferrals(Protocol):
    """A unit of work with ``referrals`` (a :class:`ReferralRepository` on its transaction)."""

    @property
    def referrals(self) -> ReferralRepository: ...
