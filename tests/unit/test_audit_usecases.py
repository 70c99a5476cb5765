"""The audit use cases on the memory adapters: who may read what, sealing, verifying with an
expected head, unsealed entries that wait too long, and the purge's retention floor."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from craig.domain.access import Principal, Role
from craig.domain.audit_chain import BreakReason, ExpectedHead
from craig.domain.audit_query import AuditFilter
from craig.domain.errors import Forbidden, InvalidCursor, InvalidInput, NotFound
from craig.usecases.audit.case_history import ShowCaseHistory
from craig.usecases.audit.list_entries import ListAuditEntries
from craig.usecases.audit.purge_expired import PurgeExpiredAuditEntries
from craig.usecases.audit.read_head import ReadAuditHead
from craig.usecases.audit.seal_entries import SealAuditEntries
from craig.usecases.audit.verify_chain import VerifyAuditChain
from craig.usecases.cases import OpenCase
from tests.support.audit import chain_store, entry, record
from tests.support.backends import Backend, memory_backend

pytestmark = pytest.mark.unit

WORKER = Principal(uuid.uuid4(), "Ann", Role.CASEWORKER)
SUPERVISOR = Principal(uuid.uuid4(), "Sue", Role.SUPERVISOR)


@pytest.fixture
async def backend() -> AsyncIterator[Backend]:
    async with memory_backend() as harness:
        yield harness


async def test_only_supervisors_and_admins_list_entries(backend: Backend) -> None:
    await record(backend.uow(), entry(), entry("update"))
    with pytest.raises(Forbidden):
        await ListAuditEntries(backend.uow())(WORKER, AuditFilter())
    page = await ListAuditEntries(backend.uow())(SUPERVISOR, AuditFilter(action="update"))
    assert [e.action for e in page.items] == ["update"]
    for bad, error in [
        ({"limit": 0}, InvalidInput),
        ({"limit": 201}, InvalidInput),
        ({"cursor": "bm90IG91cnM"}, InvalidCursor),
        ({"cursor": "%%%"}, InvalidCursor),
    ]:
        with pytest.raises(error):
            await ListAuditEntries(backend.uow())(SUPERVISOR, AuditFilter(), **bad)  # type: ignore[arg-type]


async def test_a_case_history_is_for_whoever_may_see_the_case(backend: Backend) -> None:
    assert backend.clock is not None
    case = await OpenCase(backend.uow(), backend.clock)(WORKER, title="t", family_name=None, opened_at=None)
    await record(backend.uow(), entry("read", case_id=case.id), entry("update", case_id=case.id))
    page = await ShowCaseHistory(backend.uow())(WORKER, case.id)
    # Opening the case recorded its `create`; the read is left out.
    assert sorted(e.action for e in page.items) == ["create", "update"]
    stranger = Principal(uuid.uuid4(), "Eve", Role.CASEWORKER)
    with pytest.raises(NotFound):
        await ShowCaseHistory(backend.uow())(stranger, case.id)


async def test_seal_verify_and_the_expected_head(backend: Backend) -> None:
    store = chain_store(backend)
    seal = SealAuditEntries(store, batch_size=2)
    for _ in range(3):
        await record(backend.uow(), entry())
    assert await seal.run_once() is True and await seal.run_once() is False
    head = await ReadAuditHead(store)()
    assert head is not None and head.seq == 3
    verify = VerifyAuditChain(store, backend.clock, page_size=2)  # type: ignore[arg-type]
    seen: list[tuple[int, int]] = []
    report = await verify(ExpectedHead(head.hash, 3), lambda done, total: seen.append((done, total)))
    assert report.intact and report.checked == 3 and report.head == head and seen[-1] == (3, 3)
    other = await verify(ExpectedHead(b"\7" * 32))
    assert not other.intact and other.broken is not None and other.broken.reason is BreakReason.REWRITTEN
    beyond = await verify(ExpectedHead(b"\7" * 32, 9))  # a head the chain has not reached: a cut tail
    assert beyond.broken is not None and beyond.broken.reason is BreakReason.REMOVED


async def test_entries_left_unsealed_too_long_fail_verification(backend: Backend) -> None:
    assert backend.clock is not None
    store = chain_store(backend)
    await record(backend.uow(), entry())
    verify = VerifyAuditChain(store, backend.clock)
    assert (await verify()).intact  # just written: the sealer has time
    backend.clock.advance(timedelta(minutes=11))
    report = await verify()
    assert report.stale and not report.intact and report.broken is None and report.pending.count == 1
    await SealAuditEntries(store)()
    assert (await verify()).intact


async def test_the_purge_raises_the_floor_and_never_purges_below_it(backend: Backend) -> None:
    assert backend.clock is not None
    store = chain_store(backend)
    purge = PurgeExpiredAuditEntries(store)
    for _ in range(3):
        await record(backend.uow(), entry())
    await SealAuditEntries(store)()
    backend.clock.advance(timedelta(days=3000))
    assert await purge(timedelta(days=3650), 10) == 0  # the floor rose to ten years
    assert (await store.retention_floor()).retention == timedelta(days=3650)
    assert await purge(timedelta(days=1), 10) == 0  # and a shorter setting does not lower it
    backend.clock.advance(timedelta(days=700))
    assert await purge(timedelta(days=1), 10) == 2  # the newest link stays
    with pytest.raises(ValueError):
        await purge(timedelta(0), 10)
