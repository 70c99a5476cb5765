"""``craig outbox discard``'s use case on the memory adapters: what the audit trail keeps of a
discard, the events deleted and the ids asked for that were not."""

from __future__ import annotations

import uuid
from datetime import timedelta

import attrs
import pytest

from craig.domain.audit import AuditAction
from craig.domain.audit_query import AuditFilter
from craig.domain.events import EventEnvelope
from craig.ports.outbox import PublishFailure
from craig.usecases.events.failing_events import FailingEvents
from tests.contract.test_outbox_store import event as outbox_event
from tests.contract.test_outbox_store import stage
from tests.support.backends import memory_backend

pytestmark = pytest.mark.unit


def event(aggregate_type: str, aggregate_id: str) -> EventEnvelope:
    return attrs.evolve(outbox_event(aggregate_id), aggregate_type=aggregate_type)


async def test_each_deleted_event_is_recorded_with_its_case_and_the_ids_not_deleted_too() -> None:
    case_id = uuid.uuid4()
    about_a_case, about_a_home = event("case", str(case_id)), event("foster_home", str(uuid.uuid4()))
    async with memory_backend() as backend:
        await stage(backend, about_a_case, about_a_home)
        async with backend.outbox.claim_batch(10) as batch:
            await batch.mark_failed(
                [PublishFailure(r.id, "refused for good", timedelta(hours=1)) for r in batch.events]
            )
        unknown = uuid.uuid4()
        discarded = await FailingEvents(backend.uow).discard([about_a_case.id, about_a_home.id, unknown])
        assert {e.id for e in discarded} == {about_a_case.id, about_a_home.id}
        uow = backend.uow()
        async with uow:
            entries = (await uow.audit.list(AuditFilter(action=AuditAction.OUTBOX_DISCARD), 10)).items
            history = (await uow.audit.case_history(case_id, 10)).items
    recorded = {(e.resource_id, e.resource_ids, e.case_id) for e in entries}
    assert recorded == {
        (str(about_a_case.id), (), case_id),  # shows in the case's history
        (str(about_a_home.id), (), None),
        (None, (str(unknown),), None),  # a mistyped or raced id leaves its trace
    }
    assert [e.action for e in history] == [AuditAction.OUTBOX_DISCARD]
