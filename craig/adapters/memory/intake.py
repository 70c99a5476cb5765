"""Memory adapter of the referral repository: rows hold ciphertext, like the PostgreSQL table."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs

from craig.adapters.intake_codec import referral_columns, referral_from_columns
from craig.adapters.memory.session import MemorySession
from craig.domain.intake import Referral
from craig.ports.errors import ConstraintViolation
from craig.ports.intake import ReferralRepository

REFERRALS = "referrals"


@attrs.frozen(kw_only=True)
class ReferralRow:
    """Column for column the ``referrals`` table (``craig keys rotate`` rewrites both alike)."""

    id: UUID
    reference: str
    reporter_name: str
    reporter_phone: str | None
    reporter_email: str | None
    child_details: str
    concern: str
    location: str | None
    priority: str | None
    triage_version: int | None
    matched_rule: int | None
    received_at: datetime


class MemoryReferralRepository(ReferralRepository):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    async def add(self, referral: Referral) -> None:
        tx = await self.session.tx()
        if tx.get(REFERRALS, referral.id) is not None:
            raise ConstraintViolation("referrals_pkey", f"referral {referral.id} exists")
        if tx.select(REFERRALS, lambda r: r.reference == referral.reference):
            raise ConstraintViolation("referrals_reference_key", f"reference {referral.reference} exists")
        tx.put(REFERRALS, referral.id, ReferralRow(**referral_columns(self.session.cipher, referral)))

    async def get(self, referral_id: UUID) -> Referral | None:
        row: ReferralRow | None = (await self.session.tx()).get(REFERRALS, referral_id)
        if row is None:
            return None
        return referral_from_columns(self.session.cipher, attrs.asdict(row, recurse=False))
