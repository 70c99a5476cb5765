"""PostgreSQL adapter of the referral repository (the personal columns hold ciphertext).

The queue reads ``(priority_rank, received_at, id)``: for unscreened referrals from the partial
index ``idx_referrals_unscreened``, so neither the queue nor the metrics read screened history.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import text

from craig.adapters.intake_codec import referral_columns, referral_from_columns
from craig.adapters.postgres.session import PostgresSession
from craig.domain.intake import Referral
from craig.domain.keyset import Keyset, KeysetPage, keyset_page
from craig.domain.screening import (
    PRIORITIES,
    UNSCORED_RANK,
    QueueBacklog,
    ReferralQuery,
    ResponseTimes,
    queue_key,
    rank_name,
)
from craig.ports.intake import ReferralRepository

_COLUMNS = (
    "id, reference, reporter_name, reporter_phone, reporter_email, child_details, concern, location, "
    "priority, triage_version, matched_rule, received_at, priority_rank, status, screened_at, screened_by, "
    "decision_reason, case_id, version"
)
_INSERT = text(
    f"""
    INSERT INTO referrals ({_COLUMNS})
    VALUES (:id, :reference, :reporter_name, :reporter_phone, :reporter_email, :child_details, :concern,
            :location, :priority, :triage_version, :matched_rule, :received_at, :priority_rank, :status,
            :screened_at, :screened_by, :decision_reason, :case_id, :version)
    """
)
_GET = text(f"SELECT {_COLUMNS} FROM referrals WHERE id = :id")
_GET_FOR_UPDATE = text(f"SELECT {_COLUMNS} FROM referrals WHERE id = :id FOR UPDATE")
_SAVE = text(
    """
    UPDATE referrals SET status = :status, screened_at = :screened_at, screened_by = :screened_by,
                         decision_reason = :decision_reason, case_id = :case_id, version = :version
     WHERE id = :id
    """
)
# When a referral of each rank must be screened by (unscored as low).
_DUE = (
    "received_at + CASE priority_rank WHEN 0 THEN CAST(:due0 AS interval) WHEN 1 THEN CAST(:due1 AS interval) "
    "WHEN 2 THEN CAST(:due2 AS interval) ELSE CAST(:due3 AS interval) END"
)
_OVERDUE = f"(status = 'new' AND {_DUE} < :now)"
_BACKLOG = text(
    f"""
    SELECT priority_rank, count(*) AS waiting, min(received_at) AS oldest,
           count(*) FILTER (WHERE {_DUE} < :now) AS overdue
      FROM referrals WHERE status = 'new' GROUP BY priority_rank
    """
)


def _due_params(times: ResponseTimes, now: datetime) -> dict[str, Any]:
    by_rank = times.by_rank()
    return {"due0": by_rank[0], "due1": by_rank[1], "due2": by_rank[2], "due3": by_rank[3], "now": now}


class PostgresReferralRepository(ReferralRepository):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    async def add(self, referral: Referral) -> None:
        columns = referral_columns(self.session.cipher, referral)
        await self.session.execute(_INSERT, columns)

    async def _one(self, statement: Any, referral_id: UUID) -> Referral | None:
        row = (await self.session.execute(statement, {"id": referral_id})).mappings().first()
        return referral_from_columns(self.session.cipher, row) if row else None

    async def get(self, referral_id: UUID) -> Referral | None:
        return await self._one(_GET, referral_id)

    async def get_for_update(self, referral_id: UUID) -> Referral | None:
        return await self._one(_GET_FOR_UPDATE, referral_id)

    async def save_screening(self, referral: Referral) -> None:
        await self.session.execute(_SAVE, referral_columns(self.session.cipher, referral))

    async def queue(self, query: ReferralQuery, keyset: Keyset) -> KeysetPage[Referral]:
        where = ["status = :status"]
        params: dict[str, Any] = {"status": query.status.value, "limit": keyset.limit + 1}
        if query.priority_rank is not None:
            where.append("priority_rank = :rank")
            params["rank"] = query.priority_rank
        if query.overdue is not None:
            where.append(_OVERDUE if query.overdue else f"NOT {_OVERDUE}")
            params.update(_due_params(query.times, query.now))
        if keyset.after is not None:
            where.append("(priority_rank, received_at, id) > (:after_rank, :after_received, :after_id)")
            params["after_rank"], params["after_received"], params["after_id"] = keyset.after
        statement = text(
            f"SELECT {_COLUMNS} FROM referrals WHERE {' AND '.join(where)} "
            "ORDER BY priority_rank, received_at, id LIMIT :limit"
        )
        rows = (await self.session.execute(statement, params)).mappings().all()
        items = [referral_from_columns(self.session.cipher, row) for row in rows]
        return keyset_page(items, keyset, queue_key)

    async def backlog(self, times: ResponseTimes, now: datetime) -> Sequence[QueueBacklog]:
        rows = (await self.session.execute(_BACKLOG, _due_params(times, now))).mappings().all()
        found = {row["priority_rank"]: row for row in rows}
        backlog = []
        for rank in range(len(PRIORITIES) + 1):
            row = found.get(rank)
            backlog.append(
                QueueBacklog(
                    priority=rank_name(rank),
                    count=row["waiting"] if row else 0,
                    oldest_received_at=row["oldest"] if row else None,
                    overdue=row["overdue"] if row else 0,
                )
            )
        assert len(backlog) == UNSCORED_RANK + 1
        return backlog
