"""The cleanup worker as `craig worker` wires it, on the memory profile with a controllable clock:
delivered exchange transactions go after `CRAIG_EXCHANGE__RETENTION_DAYS`, and the inbox rows a
vanished instance left under its broadcast keys after a day; live rows stay."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dependency_injector import providers

from craig.domain.access import Principal, Role
from craig.domain.constants import INBOX_BROADCAST_RETENTION
from craig.domain.event_catalogue import EXCHANGE_SENT
from craig.domain.events import EventEnvelope
from craig.domain.exchange import AttemptDecision, JobStatus
from craig.entrypoints.settings import ExchangeSettings
from craig.entrypoints.workers.registry import cleanup_loop
from craig.usecases.exchange import StartTransaction
from tests.support import apps
from tests.support.clock import FakeClock
from tests.support.exchange_data import a_partner

pytestmark = pytest.mark.unit


def envelope() -> EventEnvelope:
    return EventEnvelope(
        id=uuid.uuid4(),
        source="t",
        type="rules.cache_invalidated",
        occurred_at=datetime.now(UTC),
        payload={},
        aggregate_type="rule_set",
        aggregate_id="x",
    )


async def test_the_cleanup_loop_purges_delivered_transactions_and_broadcast_leftovers(tmp_path: Path) -> None:
    settings = apps.make_settings("memory", tmp_path, exchange=ExchangeSettings(retention_days=10))
    container = apps.make_container(settings)
    clock = FakeClock()
    container.clock.override(providers.Object(clock))
    partner = a_partner()
    uow = container.uow()
    async with uow:
        assert await uow.partners.add(partner)
        await uow.commit()
    start = StartTransaction(container.uow(), clock)
    who = Principal(uuid.uuid4(), "Ann", Role.CASEWORKER)
    delivered = await start(who, [partner.id], {"case": "c-1"})
    waiting = await start(who, [partner.id], {"case": "c-2"})
    uow = container.uow()
    async with uow:
        [claimed, _] = await uow.send_jobs.claim_due(2, timedelta(days=30))
        assert claimed.transaction_id == delivered.transaction.id
        await uow.send_jobs.record([(claimed, AttemptDecision(JobStatus.SENT, event_type=EXCHANGE_SENT))])
        await uow.commit()
    inbox = container.inbox_store()
    gone, other = envelope(), envelope()
    await inbox.enqueue("rules-cache@craig-gone", gone, "inprocess.rules-cache@craig-gone")
    await inbox.enqueue("placements-projection", other, "inprocess.placements-projection")
    clock.advance(max(timedelta(days=10), INBOX_BROADCAST_RETENTION) + timedelta(minutes=1))

    assert await cleanup_loop(container).run_once() is False  # nothing more than one batch

    uow = container.uow()
    async with uow:
        assert await uow.exchange_transactions.get(delivered.transaction.id) is None
        assert await uow.send_jobs.for_transaction(delivered.transaction.id) == []
        kept = await uow.send_jobs.for_transaction(waiting.transaction.id)
    assert [job.status for job in kept] == [JobStatus.IN_FLIGHT]  # not delivered: kept
    claimable = await inbox.claim_due(["rules-cache@craig-gone", "placements-projection"], 10, timedelta(seconds=5))
    assert [record.event_id for record in claimable] == [other.id]
