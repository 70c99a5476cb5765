"""Test data for partner exchange: partners, transactions and jobs written through a backend."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import attrs
from sqlalchemy import text

from craig.adapters.memory.exchange import PARTNERS
from craig.domain.exchange import SendJob
from craig.domain.exchange_transactions import ExchangeTransaction, new_transaction
from craig.domain.partners import Partner, new_partner
from craig.usecases.ids import new_id
from tests.support.backends import Backend

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def a_partner(name: str | None = None, base_url: str = "http://127.0.0.1:9", **extra: Any) -> Partner:
    return new_partner(
        id=new_id(),
        name=name or f"partner-{uuid.uuid4().hex[:8]}",
        base_url=base_url,
        token_url=f"{base_url}/oauth/token",
        client_id=extra.pop("client_id", "craig"),
        client_secret=extra.pop("client_secret", "s3cret"),
        rate_limit_rpm=extra.pop("rate_limit_rpm", None),
        now=NOW,
        **extra,
    )


async def add_partner(backend: Backend, partner: Partner | None = None) -> Partner:
    partner = partner or a_partner()
    uow = backend.uow()
    async with uow:
        assert await uow.partners.add(partner)
        await uow.commit()
    return partner


async def add_transaction(
    backend: Backend, partner_ids: list[uuid.UUID], payload: dict[str, Any] | None = None
) -> tuple[ExchangeTransaction, list[SendJob]]:
    transaction, jobs = new_transaction(
        id=new_id(),
        partner_ids=partner_ids,
        payload=payload or {"case": "c-1", "note": "hello"},
        created_by=uuid.uuid4(),
        job_ids=[new_id() for _ in partner_ids],
        correlation_ids=[new_id() for _ in partner_ids],
        now=NOW,
    )
    uow = backend.uow()
    async with uow:
        await uow.exchange_transactions.add(transaction)
        await uow.send_jobs.add_many(jobs)
        await uow.commit()
    return transaction, jobs


#: A stored client secret no key of the test cipher opens (its key id is unknown).
UNDECRYPTABLE_SECRET = "enc:v1:gone:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"


async def corrupt_secret(backend: Backend, partner_id: uuid.UUID) -> None:
    """Overwrite the partner's stored (encrypted) client secret with one that cannot be decrypted,
    behind the repository's back: raw SQL on PostgreSQL, the raw table in memory."""
    if backend.postgres is not None:
        async with backend.postgres.transaction() as conn:
            await conn.execute(
                text("UPDATE partners SET client_secret = :secret WHERE id = :id"),
                {"secret": UNDECRYPTABLE_SECRET, "id": partner_id},
            )
        return
    assert backend.memory is not None
    async with backend.memory.transaction() as tx:
        stored = tx.get(PARTNERS, partner_id)
        tx.put(PARTNERS, partner_id, attrs.evolve(stored, client_secret=UNDECRYPTABLE_SECRET))


async def drain_send_jobs(container: Any) -> None:
    """Run a send worker of ``container`` until no job is due, then close it."""
    from craig.entrypoints.workers.send_jobs import send_job_scheduler

    worker = send_job_scheduler(container)
    try:
        await worker.drain()
    finally:
        await worker.aclose()


async def staged_events(container: Any, kind: str) -> Counter[str]:
    """Outbox events of type ``kind`` staged so far, counted by aggregate id."""
    async with container.outbox_relay_store().claim_batch(10_000) as batch:
        return Counter(r.envelope.aggregate_id for r in batch.events if r.envelope.type == kind)
