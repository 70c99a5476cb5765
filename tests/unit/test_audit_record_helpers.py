"""The recording helpers of operator commands, anonymous callers and updates, and a dead-letter
replay's entry (written before anything is replayed), on the memory adapters."""

from __future__ import annotations

import getpass
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import attrs
import pytest

from craig.domain.audit import AuditAction, AuditOutcome
from craig.domain.audit_query import AuditFilter
from craig.usecases.audit.record import anonymous_entry, changed_field_names, operator_entry, record_alone
from craig.usecases.events import DeadLetterOperations
from tests.support.backends import Backend, memory_backend
from tests.support.dead_letters import BrokenDeadLetters, dead_letter

pytestmark = pytest.mark.unit


@pytest.fixture
async def backend() -> AsyncIterator[Backend]:
    async with memory_backend() as harness:
        yield harness


@attrs.frozen
class Thing:
    name: str
    size: int
    version: int


def test_changed_field_names_are_the_differing_attributes_sorted_without_the_ignored() -> None:
    before, after = Thing("a", 1, 1), Thing("b", 2, 2)
    assert changed_field_names(before, after) == ("name", "size", "version")
    assert changed_field_names(before, after, ignore=("version",)) == ("name", "size")
    assert changed_field_names(before, before) == ()


def test_anonymous_and_operator_entries() -> None:
    anonymous = anonymous_entry(AuditAction.CREATE, "referral", 7, request_id="r-1", client_ip="::1")
    assert (anonymous.actor, anonymous.actor_role, anonymous.resource_id) == (None, "anonymous", "7")
    assert (anonymous.request_id, anonymous.client_ip, anonymous.outcome) == ("r-1", "::1", AuditOutcome.ALLOWED)
    ids = [uuid.uuid4(), uuid.uuid4()]
    command = operator_entry(AuditAction.DLX_REPLAY, "dead_letter", resource_ids=ids)
    assert (command.actor_role, command.actor_name) == ("operator", getpass.getuser())
    assert command.resource_ids == tuple(str(i) for i in ids)


async def test_a_denied_entry_is_written_alone(backend: Backend) -> None:
    await record_alone(backend.uow(), anonymous_entry(AuditAction.CREATE, "referral", outcome=AuditOutcome.DENIED))
    async with backend.uow() as uow:
        page = await uow.audit.list(AuditFilter(), 10)
    assert [(e.outcome, e.actor_role) for e in page.items] == [(AuditOutcome.DENIED, "anonymous")]


async def test_a_replay_is_recorded_before_it_starts(backend: Backend) -> None:
    operations = DeadLetterOperations(BrokenDeadLetters([dead_letter() for _ in range(3)]), backend.uow)
    with pytest.raises(ConnectionError):
        await operations.replay(None, 10)
    async with backend.uow() as uow:
        page = await uow.audit.list(AuditFilter(action="dlx_replay"), 10)
    [entry] = page.items
    assert (entry.resource_type, entry.resource_id, entry.actor_role) == ("dead_letter", "all", "operator")
    assert entry.at is not None and entry.at <= datetime.now(UTC)
