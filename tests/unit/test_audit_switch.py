"""CRAIG_AUDIT__ENABLED=false, for benchmarks and tests only: an audited use case writes no
entry, reads still see what was written before, and the production profile refuses it."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from craig.adapters.memory.uow import MemoryUnitOfWork
from craig.adapters.unrecorded_audit import UnrecordedAuditRepository
from craig.domain.access import Principal, Role
from craig.domain.audit_query import AuditFilter
from craig.domain.errors import Forbidden
from craig.entrypoints.container import build_container
from craig.entrypoints.settings import AuditSettings, SettingsError, load_settings
from craig.usecases.audit.list_entries import ListAuditEntries
from tests.support import apps
from tests.support.audit import entry, record

pytestmark = pytest.mark.unit

SUPERVISOR = Principal(uuid.uuid4(), "Sue", Role.SUPERVISOR)
WORKER = Principal(uuid.uuid4(), "Ann", Role.CASEWORKER)

PRODUCTION = {
    "CRAIG_PROFILE": "production",
    "CRAIG_DATABASE__URL": "postgresql://db/craig",
    "CRAIG_BROKER__URL": "amqp://rabbit/",
    "CRAIG_OBJECT_STORE__ENDPOINT": "s3:9000",
    "CRAIG_OBJECT_STORE__ACCESS_KEY": "a",
    "CRAIG_OBJECT_STORE__SECRET_KEY": "b",
    "CRAIG_AUTH__JWT_SECRET": apps.JWT_SECRET,
    "CRAIG_FIELD_ENCRYPTION_KEY": apps.FIELD_KEY,
}


def test_recording_is_on_unless_switched_off_and_production_refuses_to_switch_it_off() -> None:
    assert load_settings(PRODUCTION).audit.enabled is True
    assert load_settings({"CRAIG_PROFILE": "memory", "CRAIG_AUDIT__ENABLED": "false"}).audit.enabled is False
    with pytest.raises(SettingsError) as raised:
        load_settings({**PRODUCTION, "CRAIG_AUDIT__ENABLED": "false"})
    assert str(raised.value).startswith("CRAIG_AUDIT__ENABLED=false turns the audit trail off")
    assert "benchmarks and tests only" in str(raised.value)


@pytest.mark.parametrize("enabled", [True, False])
async def test_with_the_switch_off_an_audited_use_case_writes_no_entry(tmp_path: Path, enabled: bool) -> None:
    container = build_container(apps.make_settings("memory", tmp_path, audit=AuditSettings(enabled=enabled)))
    uow = container.uow()
    assert isinstance(uow.audit, UnrecordedAuditRepository) is not enabled
    await record(container.uow(), entry("update"))  # appended through the switch too
    await ListAuditEntries(container.uow())(SUPERVISOR, AuditFilter())  # records a `list`
    with pytest.raises(Forbidden):
        await ListAuditEntries(container.uow())(WORKER, AuditFilter())  # records a `denied`
    # What was written, read with recording on: the same database, another unit of work.
    reader = MemoryUnitOfWork(container.memory_database(), container.field_cipher())
    async with reader:
        page = await reader.audit.list(AuditFilter(), 50)
    actions = sorted((e.action.value, e.outcome.value) for e in page.items)
    assert actions == ([("list", "allowed"), ("list", "denied"), ("update", "allowed")] if enabled else [])


async def test_reads_go_to_the_stored_entries() -> None:
    calls: list[str] = []

    class Stored:
        async def list(self, *args: object) -> str:
            calls.append("list")
            return "page"

        async def case_history(self, *args: object) -> str:
            calls.append("history")
            return "history"

    unrecorded = UnrecordedAuditRepository(Stored())  # type: ignore[arg-type]
    assert await unrecorded.append([entry()]) and calls == []
    assert await unrecorded.list(AuditFilter(), 10) == "page"  # type: ignore[comparison-overlap]
    assert await unrecorded.case_history(uuid.uuid4(), 10) == "history"  # type: ignore[comparison-overlap]
    assert calls == ["list", "history"]
