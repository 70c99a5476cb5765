"""PostgreSQL adapter of the referral repository (the personal columns hold ciphertext)."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import text

from craig.adapters.intake_codec import referral_columns, referral_from_columns
from craig.adapters.postgres.errors import db_errors
from craig.adapters.postgres.session import PostgresSession
from craig.domain.intake import Referral
from craig.ports.intake import ReferralRepository

_COLUMNS = (
    "id, reference, reporter_name, reporter_phone, reporter_email, child_details, concern, location, "
    "priority, triage_version, matched_rule, received_at"
)
_INSERT = text(
    f"""
    INSERT INTO referrals ({_COLUMNS})
    VALUES (:id, :reference, :reporter_name, :reporter_phone, :reporter_email, :child_details, :concern,
            :location, :priority, :triage_version, :matched_rule, :received_at)
    """
)
_GET = text(f"SELECT {_COLUMNS} FROM referrals WHERE id = :id")


class PostgresReferralRepository(ReferralRepository):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    async def add(self, referral: Referral) -> None:
        columns = referral_columns(self.session.cipher, referral)
        async with db_errors():
            await self.session.execute(_INSERT, columns)

    async def get(self, referral_id: UUID) -> Referral | None:
        async with db_errors():
            row = (await self.session.execute(_GET, {"id": referral_id})).mappings().first()
        return referral_from_columns(self.session.cipher, row) if row else None
