"""Memory adapter of the referral repository: rows hold ciphertext, like the PostgreSQL table."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import attrs

from craig.adapters.intake_codec import referral_columns, referral_from_columns
from craig.adapters.memory.session import MemorySession
from craig.domain.intake import Referral
from craig.domain.keyset import Keyset, KeysetPage, after, keyset_page
from craig.domain.screening import (
    PRIORITIES,
    QueueBacklog,
    ReferralQuery,
    ResponseTimes,
    queue_key,
    rank_name,
)
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
    priority_rank: int
    status: str = "new"
    screened_at: datetime | None = None
    screened_by: UUID | None = None
    decision_reason: str | None = None
    case_id: UUID | None = None
    version: int = 1


class MemoryReferralRepository(ReferralRepository):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    def _referral(self, row: ReferralRow) -> Referral:
        return referral_from_columns(self.session.cipher, attrs.asdict(row, recurse=False))

    async def add(self, referral: Referral) -> None:
        tx = await self.session.tx()
        if tx.get(REFERRALS, referral.id) is not None:
            raise ConstraintViolation("referrals_pkey", f"referral {referral.id} exists")
        if tx.select(REFERRALS, lambda r: r.reference == referral.reference):
            raise ConstraintViolation("referrals_reference_key", f"reference {referral.reference} exists")
        tx.put(REFERRALS, referral.id, ReferralRow(**referral_columns(self.session.cipher, referral)))

    async def get(self, referral_id: UUID) -> Referral | None:
        row: ReferralRow | None = (await self.session.tx()).get(REFERRALS, referral_id)
        return self._referral(row) if row is not None else None

    async def get_for_update(self, referral_id: UUID) -> Referral | None:
        return await self.get(referral_id)  # one transaction at a time: every read is locked

    async def save_screening(self, referral: Referral) -> None:
        tx = await self.session.tx()
        row: ReferralRow | None = tx.get(REFERRALS, referral.id)
        if row is None:
            return
        columns = referral_columns(self.session.cipher, referral)
        changed = {
            name: columns[name]
            for name in ("status", "screened_at", "screened_by", "decision_reason", "case_id", "version")
        }
        tx.put(REFERRALS, referral.id, attrs.evolve(row, **changed))

    async def queue(self, query: ReferralQuery, keyset: Keyset) -> KeysetPage[Referral]:
        rows: list[ReferralRow] = (await self.session.tx()).select(
            REFERRALS,
            lambda r: (
                r.status == query.status
                and (query.priority_rank is None or r.priority_rank == query.priority_rank)
                and after((r.priority_rank, r.received_at, r.id), keyset, (False, False, False))
            ),
        )
        rows.sort(key=lambda r: (r.priority_rank, r.received_at, r.id))
        found: list[Referral] = []
        for row in rows:
            referral = self._referral(row)
            if query.matches(referral):
                found.append(referral)
                if len(found) > keyset.limit:
                    break
        return keyset_page(found, keyset, queue_key)

    async def backlog(self, times: ResponseTimes, now: datetime) -> Sequence[QueueBacklog]:
        waiting: list[ReferralRow] = (await self.session.tx()).select(REFERRALS, lambda r: r.status == "new")
        backlog = []
        for rank in range(len(PRIORITIES) + 1):
            rows = [r for r in waiting if r.priority_rank == rank]
            due = times.by_rank()[rank]
            overdue = sum(1 for r in rows if now > r.received_at + due)
            oldest = min((r.received_at for r in rows), default=None)
            backlog.append(
                QueueBacklog(priority=rank_name(rank), count=len(rows), oldest_received_at=oldest, overdue=overdue)
            )
        return backlog
