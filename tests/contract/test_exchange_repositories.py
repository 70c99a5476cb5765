"""Contract of PartnerRepository, TransactionRepository and PartnerRateLimits, on every adapter
(memory and PostgreSQL)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import text

from craig.adapters.crypto.aesgcm import is_encrypted
from craig.adapters.memory.uow import MemoryUnitOfWork
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.adapters.sealed_fields import PARTNER_CLIENT_SECRET
from craig.domain.event_catalogue import EXCHANGE_SEND_FAILED, EXCHANGE_SENT
from craig.domain.exchange import AttemptDecision, JobStatus
from craig.domain.exchange_transactions import ExchangeTransaction
from craig.domain.pages import PageRequest
from craig.ports.unit_of_work import UnitOfWork
from tests.support.backends import Backend
from tests.support.ciphers import TEST_CIPHER
from tests.support.exchange_data import a_partner, add_partner, add_transaction

pytestmark = pytest.mark.contract


def ciphered_uow(backend: Backend) -> UnitOfWork:
    """A unit of work with the real AES-256-GCM cipher."""
    if backend.memory is not None:
        return MemoryUnitOfWork(backend.memory, cipher=TEST_CIPHER)
    assert backend.postgres is not None
    return PostgresUnitOfWork(backend.postgres, cipher=TEST_CIPHER)


async def stored_secret(backend: Backend, partner_id: uuid.UUID) -> str:
    if backend.memory is not None:
        async with backend.memory.transaction() as tx:
            return str(tx.get("partners", partner_id).client_secret)
    assert backend.postgres is not None
    async with backend.postgres.transaction() as conn:
        query = text("SELECT client_secret FROM partners WHERE id = :id")
        return str((await conn.execute(query, {"id": partner_id})).scalar_one())


async def test_client_secret_is_encrypted_at_rest_and_decrypted_on_read(backend: Backend) -> None:
    partner = a_partner(client_secret="top-secret")
    uow = ciphered_uow(backend)
    async with uow:
        assert await uow.partners.add(partner)
        await uow.commit()
    stored = await stored_secret(backend, partner.id)
    assert is_encrypted(stored) and "top-secret" not in stored
    assert TEST_CIPHER.decrypt(stored, PARTNER_CLIENT_SECRET.context(partner.id)) == "top-secret"
    uow = ciphered_uow(backend)
    async with uow:
        assert (await uow.partners.get(partner.id)) == partner
        assert (await uow.partners.get_many([partner.id]))[partner.id].client_secret == "top-secret"


async def test_partner_names_are_unique(backend: Backend) -> None:
    await add_partner(backend, a_partner("County"))
    uow = backend.uow()
    async with uow:
        assert not await uow.partners.add(a_partner("County"))


async def test_partners_list_by_name_with_total_and_get_many_skips_unknown(backend: Backend) -> None:
    for name in ("b-agency", "a-agency", "c-agency"):
        await add_partner(backend, a_partner(name, rate_limit_rpm=120))
    uow = backend.uow()
    async with uow:
        page = await uow.partners.list(PageRequest(page=1, per_page=2))
        rest = await uow.partners.list(PageRequest(page=2, per_page=2))
        found = await uow.partners.get_many([page.items[0].id, uuid.uuid4()])
        missing = await uow.partners.get(uuid.uuid4())
    assert [p.name for p in page.items] == ["a-agency", "b-agency"] and page.total == 3
    assert [p.name for p in rest.items] == ["c-agency"]
    assert list(found) == [page.items[0].id] and missing is None
    assert page.items[0].rate_limit_rpm == 120


async def test_transactions_round_trip(backend: Backend) -> None:
    partner = await add_partner(backend)
    transaction, _ = await add_transaction(backend, [partner.id], {"case": "c-9", "items": [1, "two"]})
    uow = backend.uow()
    async with uow:
        stored = await uow.exchange_transactions.get(transaction.id)
        assert await uow.exchange_transactions.get(uuid.uuid4()) is None
    assert stored == transaction


SENT = AttemptDecision(JobStatus.SENT, event_type=EXCHANGE_SENT)
FAILED = AttemptDecision(JobStatus.FAILED, error="partner answered 400", event_type=EXCHANGE_SEND_FAILED)
LATER = AttemptDecision(JobStatus.PENDING, retry_in=timedelta(hours=1), error="partner answered 503")


async def settled(backend: Backend, *decisions: AttemptDecision | None) -> ExchangeTransaction:
    """A transaction with one job per decision, each claimed and then decided (None: left in flight)."""
    partners = [await add_partner(backend) for _ in decisions]
    transaction, jobs = await add_transaction(backend, [p.id for p in partners])
    uow = backend.uow()
    async with uow:
        claimed = {job.id: job for job in await uow.send_jobs.claim_due(len(jobs), timedelta(minutes=5))}
        assert set(claimed) == {job.id for job in jobs}
        outcomes = [(claimed[job.id], d) for job, d in zip(jobs, decisions, strict=True) if d is not None]
        await uow.send_jobs.record(outcomes)
        await uow.commit()
    return transaction


async def left(backend: Backend, transaction: ExchangeTransaction) -> tuple[bool, list[JobStatus]]:
    uow = backend.uow()
    async with uow:
        kept = await uow.exchange_transactions.get(transaction.id) is not None
        return kept, [job.status for job in await uow.send_jobs.for_transaction(transaction.id)]


async def test_delivered_transactions_are_purged_after_their_retention_in_batches(backend: Backend) -> None:
    delivered = [await settled(backend, SENT, SENT) for _ in range(3)]
    with_failed = await settled(backend, SENT, FAILED)
    with_pending = await settled(backend, SENT, LATER)
    with_in_flight = await settled(backend, SENT, None)
    await backend.sleep(0.5)
    recent = await settled(backend, SENT)

    async def purge(limit: int) -> int:
        uow = backend.uow()
        async with uow:
            deleted = await uow.exchange_transactions.purge_delivered(timedelta(seconds=0.4), limit)
            await uow.commit()
        return deleted

    # Two transactions (of two jobs each) a batch, whole.
    assert [await purge(2) for _ in range(3)] == [4, 2, 0]
    for transaction in delivered:
        assert await left(backend, transaction) == (False, [])
    assert await left(backend, with_failed) == (True, [JobStatus.SENT, JobStatus.FAILED])
    assert await left(backend, with_pending) == (True, [JobStatus.SENT, JobStatus.PENDING])
    assert await left(backend, with_in_flight) == (True, [JobStatus.SENT, JobStatus.IN_FLIGHT])
    assert await left(backend, recent) == (True, [JobStatus.SENT])


async def reserve(backend: Backend, key: uuid.UUID, rate: int, count: int, max_wait: timedelta) -> list[Any]:
    uow = backend.uow()
    async with uow:
        slots = await uow.partner_rate_limits.reserve(key, rate, count, max_wait)
        await uow.commit()
    return slots


async def test_rate_limiter_grants_consecutive_slots_within_max_wait(backend: Backend) -> None:
    slots = await reserve(backend, uuid.uuid4(), 60, 5, timedelta(seconds=2.5))
    assert [s.granted for s in slots] == [True, True, True, False, False]
    waits = [s.wait.total_seconds() for s in slots]
    assert waits[0] == pytest.approx(0, abs=0.05)
    assert waits[1] == pytest.approx(1, abs=0.05) and waits[2] == pytest.approx(2, abs=0.05)
    assert waits[3] == waits[4] == pytest.approx(3, abs=0.05)


async def test_a_denied_reservation_consumes_nothing_and_time_frees_slots(backend: Backend) -> None:
    key, rate = uuid.uuid4(), 600  # one slot per 0.1 s
    first = await reserve(backend, key, rate, 3, timedelta(0))
    assert [s.granted for s in first] == [True, False, False]
    denied = await reserve(backend, key, rate, 1, timedelta(0))
    assert not denied[0].granted
    await backend.sleep(0.15)
    [again] = await reserve(backend, key, rate, 1, timedelta(0))
    assert again.granted and again.wait == timedelta(0)


async def test_a_reservation_rolled_back_takes_nothing(backend: Backend) -> None:
    key = uuid.uuid4()
    uow = backend.uow()
    async with uow:
        await uow.partner_rate_limits.reserve(key, 1, 1, timedelta(0))  # no commit
    [slot] = await reserve(backend, key, 1, 1, timedelta(0))
    assert slot.granted and slot.wait == timedelta(0)


async def test_keys_are_independent(backend: Backend) -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    await reserve(backend, a, 1, 1, timedelta(0))
    [slot] = await reserve(backend, b, 1, 1, timedelta(0))
    assert slot.granted and slot.wait == timedelta(0)


async def test_concurrent_reservations_never_share_a_slot(backend: Backend) -> None:
    key = uuid.uuid4()
    results = await asyncio.gather(*(reserve(backend, key, 60, 1, timedelta(minutes=1)) for _ in range(20)))
    waits = sorted(r[0].wait.total_seconds() for r in results)
    assert all(r[0].granted for r in results)
    # One slot per second: the n-th reservation waits about n seconds (less what elapsed meanwhile).
    assert [round(w) for w in waits] == list(range(20))
