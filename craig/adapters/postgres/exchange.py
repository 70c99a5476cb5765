"""PostgreSQL adapters of the partner and transaction repositories (send jobs: ``send_jobs.py``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.sql import bindparam

from craig.adapters.postgres.session import PostgresSession
from craig.adapters.sealed_fields import (
    PARTNER_CLIENT_SECRET,
    TRANSACTION_PAYLOAD,
    seal,
    seal_json,
    unseal,
    unseal_json,
)
from craig.domain.exchange_transactions import ExchangeTransaction
from craig.domain.keyset import Keyset, KeysetPage, keyset_page
from craig.domain.pages import Page, PageRequest
from craig.domain.partners import Partner
from craig.ports.cipher import FieldCipher
from craig.ports.exchange import PartnerRepository, TransactionRepository, UnusablePartner

PARTNER_COLUMNS = (
    "id",
    "name",
    "base_url",
    "token_url",
    "client_id",
    "client_secret",
    "rate_limit_rpm",
    "send_path",
    "records_path",
    "created_at",
)
_PARTNER_COLUMNS = ", ".join(PARTNER_COLUMNS)
_ADD_PARTNER = text(
    f"""
    INSERT INTO partners ({_PARTNER_COLUMNS})
    VALUES (:id, :name, :base_url, :token_url, :client_id, :client_secret, :rate_limit_rpm,
            :send_path, :records_path, :created_at)
    ON CONFLICT DO NOTHING
    RETURNING id
    """
)
_GET_PARTNER = text(f"SELECT {_PARTNER_COLUMNS} FROM partners WHERE id = :id")
#: Shared with the send-job worker's pass, which runs it on its own connection.
GET_PARTNERS = f"SELECT {_PARTNER_COLUMNS} FROM partners WHERE id = ANY(CAST(:ids AS uuid[]))"
_GET_PARTNERS = text(GET_PARTNERS).bindparams(bindparam("ids", type_=ARRAY(PG_UUID(as_uuid=True))))
_LIST_PARTNERS = text(f"SELECT {_PARTNER_COLUMNS} FROM partners ORDER BY name, id LIMIT :limit OFFSET :offset")
_COUNT_PARTNERS = text("SELECT count(*) FROM partners")
_PARTNERS_PAGE = f"SELECT {_PARTNER_COLUMNS} FROM partners {{after}} ORDER BY name, id LIMIT :limit"

_ADD_TRANSACTION = text(
    """
    INSERT INTO exchange_transactions (id, payload, created_by, created_at)
    VALUES (:id, :payload, :created_by, :created_at)
    """
)
_GET_TRANSACTION = text("SELECT id, payload, created_by, created_at FROM exchange_transactions WHERE id = :id")
# Retention (see migration 0015). ``candidates``: the oldest transactions by the time their
# retention counts from (``retention_from``, else their creation), through its index, at most
# ``:limit``. Each one's jobs are looked at through the transaction index (a LATERAL per
# candidate, so the planner cannot hash the whole table instead). A transaction whose every job
# was sent long enough ago is deleted, its jobs by ``ON DELETE CASCADE``. Any other is kept, and
# its ``retention_from`` moves on: to its last job's completion when all were sent (the moment it
# becomes purgeable), else to now (looked at again one retention period later). So a pass reads
# at most ``:limit`` transactions and their jobs, however many are kept: a kept one leaves the
# front of the walk instead of being read again by every pass.
PURGE_DELIVERED = text(
    """
    WITH candidates AS MATERIALIZED (
        SELECT t.id FROM exchange_transactions t
         WHERE coalesce(t.retention_from, t.created_at) < now() - make_interval(secs => :age)
         ORDER BY coalesce(t.retention_from, t.created_at)
         LIMIT :limit
           FOR UPDATE SKIP LOCKED
    ), judged AS MATERIALIZED (
        SELECT c.id, j.jobs,
               j.jobs > 0 AND j.young = 0 AS delivered,
               CASE WHEN j.jobs > 0 AND j.unsent = 0 THEN coalesce(j.last_completed, now()) ELSE now() END
                 AS retention_from
          FROM candidates c
         CROSS JOIN LATERAL (
               SELECT count(*) AS jobs,
                      count(*) FILTER (WHERE o.status <> 'sent') AS unsent,
                      count(*) FILTER (WHERE o.status <> 'sent'
                                          OR o.completed_at >= now() - make_interval(secs => :age)) AS young,
                      max(o.completed_at) AS last_completed
                 FROM exchange_send_jobs o WHERE o.transaction_id = c.id) j
    ), purged AS (
        DELETE FROM exchange_transactions WHERE id = ANY(ARRAY(SELECT id FROM judged WHERE delivered)) RETURNING id
    ), kept AS (
        UPDATE exchange_transactions t SET retention_from = j.retention_from
          FROM judged j
         WHERE t.id = ANY(ARRAY(SELECT id FROM judged WHERE NOT delivered)) AND t.id = j.id
    )
    SELECT coalesce(sum(jobs), 0) FROM judged WHERE id IN (SELECT id FROM purged)
    """
)


def partner_from_row(row: Mapping[str, Any], cipher: FieldCipher, prefix: str = "") -> Partner:
    """A partner from its columns (named ``prefix + column``), its client secret decrypted."""
    return Partner(
        id=row[prefix + "id"],
        name=row[prefix + "name"],
        base_url=row[prefix + "base_url"],
        token_url=row[prefix + "token_url"],
        client_id=row[prefix + "client_id"],
        client_secret=unseal(cipher, PARTNER_CLIENT_SECRET, row[prefix + "id"], row[prefix + "client_secret"]),
        rate_limit_rpm=row[prefix + "rate_limit_rpm"],
        send_path=row[prefix + "send_path"],
        records_path=row[prefix + "records_path"],
        created_at=row[prefix + "created_at"],
    )


def usable_partner_from_row(row: Mapping[Any, Any], cipher: FieldCipher) -> Partner | UnusablePartner:
    """:func:`partner_from_row`, or an :class:`UnusablePartner` when its secret does not decrypt."""
    try:
        return partner_from_row(row, cipher)
    except ValueError as error:
        return UnusablePartner.undecryptable(row["id"], error)


class PostgresPartnerRepository(PartnerRepository):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    def _partner(self, row: Mapping[Any, Any]) -> Partner:
        return partner_from_row(row, self.session.cipher)

    async def add(self, partner: Partner) -> bool:
        params = {
            "id": partner.id,
            "name": partner.name,
            "base_url": partner.base_url,
            "token_url": partner.token_url,
            "client_id": partner.client_id,
            "client_secret": seal(self.session.cipher, PARTNER_CLIENT_SECRET, partner.id, partner.client_secret),
            "rate_limit_rpm": partner.rate_limit_rpm,
            "send_path": partner.send_path,
            "records_path": partner.records_path,
            "created_at": partner.created_at,
        }
        row = (await self.session.execute(_ADD_PARTNER, params)).first()
        return row is not None

    async def get(self, partner_id: UUID) -> Partner | None:
        row = (await self.session.execute(_GET_PARTNER, {"id": partner_id})).mappings().first()
        return self._partner(row) if row else None

    async def get_many(self, partner_ids: Collection[UUID]) -> dict[UUID, Partner]:
        if not partner_ids:
            return {}
        rows = (await self.session.execute(_GET_PARTNERS, {"ids": list(set(partner_ids))})).mappings()
        partners = [self._partner(row) for row in rows]
        return {p.id: p for p in partners}

    async def load_for_sending(self, partner_ids: Collection[UUID]) -> dict[UUID, Partner | UnusablePartner]:
        if not partner_ids:
            return {}
        rows = (await self.session.execute(_GET_PARTNERS, {"ids": list(set(partner_ids))})).mappings()
        partners = [usable_partner_from_row(row, self.session.cipher) for row in rows]
        return {p.id: p for p in partners}

    async def list_page(self, keyset: Keyset) -> KeysetPage[Partner]:
        params: dict[str, Any] = {"limit": keyset.limit + 1}
        bound = ""
        if keyset.after is not None:
            bound = "WHERE (name, id) > (:after_name, :after_id)"
            params["after_name"], params["after_id"] = keyset.after
        rows = (await self.session.execute(text(_PARTNERS_PAGE.format(after=bound)), params)).mappings()
        items = [self._partner(row) for row in rows]
        return keyset_page(items, keyset, lambda partner: (partner.name, partner.id))

    async def list(self, page: PageRequest) -> Page[Partner]:
        conn = await self.session.connection()
        total = (await conn.execute(_COUNT_PARTNERS)).scalar_one()
        rows = (await conn.execute(_LIST_PARTNERS, {"limit": page.per_page, "offset": page.offset})).mappings()
        items = [self._partner(row) for row in rows]
        return Page(items=items, page=page.page, per_page=page.per_page, total=total)


class PostgresTransactionRepository(TransactionRepository):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    async def add(self, transaction: ExchangeTransaction) -> None:
        await self.session.execute(
            _ADD_TRANSACTION,
            {
                "id": transaction.id,
                "payload": seal_json(self.session.cipher, TRANSACTION_PAYLOAD, transaction.id, transaction.payload),
                "created_by": transaction.created_by,
                "created_at": transaction.created_at,
            },
        )

    async def get(self, transaction_id: UUID) -> ExchangeTransaction | None:
        row = (await self.session.execute(_GET_TRANSACTION, {"id": transaction_id})).mappings().first()
        if row is None:
            return None
        payload = unseal_json(self.session.cipher, TRANSACTION_PAYLOAD, row["id"], row["payload"])
        return ExchangeTransaction(
            id=row["id"], payload=payload, created_by=row["created_by"], created_at=row["created_at"]
        )

    async def purge_delivered(self, older_than: timedelta, limit: int) -> int:
        params = {"age": older_than.total_seconds(), "limit": limit}
        return int((await self.session.execute(PURGE_DELIVERED, params)).scalar_one())
