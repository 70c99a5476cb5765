"""Contract of the audit trail's ports (``uow.audit`` and the chain store), on every adapter."""

from __future__ import annotations

import uuid
from datetime import timedelta

import attrs
import pytest

from craig.domain.audit import AuditEntry
from craig.domain.audit_chain import GENESIS, ChainHead, ChainStart
from craig.domain.audit_query import AuditCursor, AuditFilter
from craig.domain.audit_verify import verify_chain
from craig.domain.constants import AUDIT_RETENTION
from craig.ports.audit import AuditChainStore
from craig.ports.errors import ConstraintViolation
from tests.support.audit import audit_log, chain_store, entry, lower_floor, record
from tests.support.backends import Backend

pytestmark = pytest.mark.contract


@pytest.fixture
def chain(backend: Backend) -> AuditChainStore:
    return chain_store(backend)


async def listed(backend: Backend, where: AuditFilter | None = None, limit: int = 200) -> list[AuditEntry]:
    async with backend.uow() as uow:
        page = await uow.audit.list(where or AuditFilter(), limit)
    return list(page.items)


async def all_links(chain: AuditChainStore) -> list:  # type: ignore[type-arg]
    return await chain.links(0, 10_000)


async def test_entries_exist_when_their_transaction_commits_stamped_by_the_database(backend: Backend) -> None:
    uow = backend.uow()
    async with uow:
        (stored,) = await uow.audit.append([attrs.evolve(entry(actor_name="Ann"), seq=7)])
        assert stored.at is not None and stored.seq is None and stored.actor_name == "Ann"
    assert await listed(backend) == []  # rolled back: never written
    (kept,) = await record(backend.uow(), entry(case_id=uuid.uuid4()))
    (shown,) = await listed(backend)
    assert shown == kept and shown.at is not None and shown.seq is None


async def test_the_log_writes_entries_on_their_own_all_or_none(backend: Backend) -> None:
    one, two, three = entry("replay"), entry("replay"), entry("replay")
    await audit_log(backend).append([one])
    await audit_log(backend).append([two, three])
    shown = await listed(backend)
    assert {e.id for e in shown} == {one.id, two.id, three.id} and all(e.at is not None for e in shown)
    with pytest.raises(ConstraintViolation):  # the second id exists: neither is written
        await audit_log(backend).append([entry("replay"), attrs.evolve(one, at=None)])
    assert len(await listed(backend)) == 3
    await audit_log(backend, record=False).append([entry("replay")])  # the switch off: dropped
    assert len(await listed(backend)) == 3


async def test_an_id_is_recorded_once(backend: Backend) -> None:
    (first,) = await record(backend.uow(), entry())
    with pytest.raises(ConstraintViolation):
        await record(backend.uow(), attrs.evolve(first, at=None))


async def test_sealing_chains_committed_entries_in_order_and_the_chain_verifies(
    backend: Backend, chain: AuditChainStore
) -> None:
    assert await chain.head() is None
    assert (await chain.seal_pending(10)).sealed == 0
    first = await record(backend.uow(), entry(), entry())
    second = await record(backend.uow(), entry(action="update", changed_fields=["title"]))
    assert (await chain.pending()).count == 3
    batch = await chain.seal_pending(2)
    assert batch.sealed == 2 and batch.head is not None and batch.head.seq == 2
    rest = await chain.seal_pending(2)
    assert rest.sealed == 1 and rest.head == await chain.head()
    again = await chain.seal_pending(2)
    assert again.sealed == 0 and again.head == rest.head
    links = await all_links(chain)
    # transaction order first, then (at, id) within a transaction
    assert [link.entry_id for link in links] == [*sorted(e.id for e in first), second[0].id]
    assert links[0].prev_hash == GENESIS.hash and verify_chain(links) is None
    assert await chain.start() == ChainStart() and await chain.count_links() == 3
    assert await chain.seq_of_hash(links[1].hash) == 2 and await chain.seq_of_hash(b"\0" * 32) is None
    assert await chain.link_at(3) == links[2] and await chain.link_at(4) is None
    assert (await chain.pending()).count == 0
    seqs = {e.id: e.seq for e in await listed(backend)}
    assert seqs == {link.entry_id: link.seq for link in links}


async def test_lists_filter_and_page_newest_first(backend: Backend, chain: AuditChainStore) -> None:
    case, ann = uuid.uuid4(), uuid.uuid4()
    stored = []
    for n in range(7):
        stored += await record(
            backend.uow(),
            entry(
                action=["read", "update", "create", "list"][n % 4],
                resource_type="contact" if n % 2 else "case",
                case_id=case if n < 5 else None,
                actor=ann if n % 3 == 0 else None,
                outcome="denied" if n == 4 else "allowed",
                resource_ids=["a", "b"] if n % 4 == 3 else [],
            ),
        )
        await backend.sleep(0.01)
    await chain.seal_pending(3)
    newest_first = sorted(stored, key=lambda e: (e.at, e.id), reverse=True)
    shown = await listed(backend)
    assert [e.id for e in shown] == [e.id for e in newest_first]
    assert {e.seq for e in shown} == {1, 2, 3, None}

    def ids(where: AuditFilter) -> list[uuid.UUID]:
        return [e.id for e in newest_first if where.matches(e)]

    for where in [
        AuditFilter(case_id=case),
        AuditFilter(actor=ann),
        AuditFilter(action="update"),
        AuditFilter(resource_type="contact"),
        AuditFilter(outcome="denied"),
        AuditFilter(case_id=case, changes_only=True),
        AuditFilter(since=newest_first[4].at, until=newest_first[1].at),
    ]:
        assert [e.id for e in await listed(backend, where)] == ids(where), where
        assert ids(where)  # each filter selects something, and not everything
    pages, cursor = [], None
    while True:
        async with backend.uow() as uow:
            page = await uow.audit.list(AuditFilter(), 3, AuditCursor.decode(cursor) if cursor else None)
        pages.append([e.id for e in page.items])
        cursor = page.next_cursor
        if cursor is None:
            break
    assert [len(p) for p in pages] == [3, 3, 1] and [i for p in pages for i in p] == [e.id for e in newest_first]


async def test_a_case_history_leaves_out_reads_refusals_and_other_cases(backend: Backend) -> None:
    case = uuid.uuid4()
    await record(
        backend.uow(),
        entry("read", case_id=case),
        entry("list", case_id=case),
        entry("search", case_id=case),
        entry("download", "attachment", case_id=case),
        entry("replay", "request", case_id=case),
        entry("close", case_id=case, outcome="denied"),
    )
    changes = await record(
        backend.uow(),
        entry("update", case_id=case, changed_fields=["title"]),
        entry("upload", "attachment", case_id=case),
        entry("assign", case_id=case),
    )
    await record(backend.uow(), entry("update", case_id=uuid.uuid4()))
    async with backend.uow() as uow:
        page = await uow.audit.case_history(case, 2)
        assert len(page.items) == 2 and page.next_cursor is not None
        rest = await uow.audit.case_history(case, 2, AuditCursor.decode(page.next_cursor))
    assert {e.id for e in [*page.items, *rest.items]} == {e.id for e in changes} and rest.next_cursor is None


async def test_the_retention_floor_only_rises_through_the_port(chain: AuditChainStore) -> None:
    floor = await chain.retention_floor()
    assert floor.retention == AUDIT_RETENTION and not floor.ever_lowered
    assert (await chain.raise_retention_floor(timedelta(days=3000))).retention == timedelta(days=3000)
    assert (await chain.raise_retention_floor(timedelta(days=10))).retention == timedelta(days=3000)


async def test_purge_never_goes_below_the_floor(backend: Backend, chain: AuditChainStore) -> None:
    await record(backend.uow(), entry(), entry())
    await chain.seal_pending(10)
    await record(backend.uow(), entry())
    await chain.seal_pending(10)
    await backend.sleep(1.5)
    assert await chain.purge(timedelta(seconds=1), 10) == 0  # the floor (7 years) wins
    assert await chain.count_links() == 3


async def test_purge_keeps_the_chain_verifiable_from_its_first_kept_link(
    backend: Backend, chain: AuditChainStore
) -> None:
    await lower_floor(backend, timedelta(seconds=1))
    assert (await chain.retention_floor()).ever_lowered
    for _ in range(4):
        await record(backend.uow(), entry())
    await chain.seal_pending(10)
    before = await all_links(chain)
    await backend.sleep(1.5)
    young = await record(backend.uow(), entry())
    await chain.seal_pending(10)
    assert await chain.purge(timedelta(seconds=1), 3) == 3
    assert await chain.start() == ChainStart(4, before[2].hash)
    assert await chain.purge(timedelta(seconds=1), 3) == 1  # then stops at the young link
    assert await chain.purge(timedelta(seconds=1), 3) == 0
    kept = await all_links(chain)
    assert [link.entry_id for link in kept] == [young[0].id]
    start = await chain.start()
    assert start == ChainStart(5, before[3].hash) and verify_chain(kept, start) is None
    assert {e.id for e in await listed(backend)} == {young[0].id}
    await backend.sleep(1.5)
    assert await chain.purge(timedelta(seconds=1), 3) == 0  # never the newest link
    later = await record(backend.uow(), entry())
    batch = await chain.seal_pending(10)
    assert batch.head is not None and batch.head.seq == 6
    kept = await all_links(chain)
    assert [link.entry_id for link in kept] == [young[0].id, later[0].id] and verify_chain(kept, start) is None


async def test_the_head_follows_the_purged_anchor_even_when_sealing_resumes(
    backend: Backend, chain: AuditChainStore
) -> None:
    await record(backend.uow(), entry())
    batch = await chain.seal_pending(1)
    assert batch.head == ChainHead(1, (await all_links(chain))[0].hash) == await chain.head()
