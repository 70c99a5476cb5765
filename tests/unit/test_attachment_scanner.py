"""The scanner's decisions on the memory adapters with a controllable clock."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import pytest

from craig.adapters.memory.object_store import MemoryObjectStore
from craig.domain.attachments import Attachment, ObjectStatus, new_attachment
from craig.domain.constants import ATTACHMENT_SCAN_MAX_REFUSALS
from craig.ports.errors import ObjectStoreDefect, ObjectStoreUnavailable
from craig.usecases.attachments import REGISTERED_TABLES, AttachmentScanner
from craig.usecases.attachments.failed_attachments import FailedAttachments
from tests.support.casework import World, person

pytestmark = pytest.mark.unit

GRACE = timedelta(hours=1)


@pytest.fixture
def world() -> World:
    return World.new()


async def pending_row(world: World, name: str, size: int = 5) -> Attachment:
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    draft = new_attachment(
        id=uuid.uuid4(),
        case_id=case.id,
        contact_id=contact.id,
        attachment_type=None,
        file_name=name,
        content_type="text/plain",
        file_size=size,
        uploaded_by=ann.sub,
        worker_name=ann.name,
        now=world.clock.now(),
    )
    uow = world.uow()
    async with uow:
        row = await uow.attachments.add(draft)
        await uow.commit()
    return row


async def statuses(world: World) -> dict[str, ObjectStatus]:
    return {row.file_name: row.object_status for row in await world.attachment_rows()}


def scanner(world: World, **kw: int) -> AttachmentScanner:
    return AttachmentScanner(world.store, world.uow, world.clock, GRACE, REGISTERED_TABLES, **kw)


async def test_each_pending_case_is_settled_after_grace(world: World) -> None:
    stored = await pending_row(world, "stored.txt")
    await world.store.put(stored.object_key, b"12345", "text/plain")
    await pending_row(world, "missing.txt")
    odd = await pending_row(world, "odd.txt")
    await world.store.put(odd.object_key, b"1234567", "text/plain")

    early = await scanner(world).run_once()
    assert (early.present, early.missing, early.mismatched) == (0, 0, 0)
    world.clock.advance(GRACE + timedelta(seconds=1))
    young = await pending_row(world, "young.txt")

    report = await scanner(world).run_once()
    assert (report.present, report.missing, report.mismatched, report.store_errors) == (1, 1, 1, 0)
    assert await statuses(world) == {
        "stored.txt": ObjectStatus.PRESENT,
        "odd.txt": ObjectStatus.FAILED,
        "young.txt": ObjectStatus.PENDING,
    }
    failed = await world.events("cases.contact_attachment_upload_failed")
    assert sorted(payload["reason"][:20] for _, payload in failed) == [
        "the object was never",
        "the stored object ha",
    ]
    assert await world.store.head(odd.object_key) == 7  # kept for an operator
    assert await world.store.head(young.object_key) is None
    (backlog,) = (await scanner(world).backlog()).values()
    assert (backlog.pending, backlog.failed) == (1, 1)  # young waits; odd is kept for an operator
    assert (await scanner(world).run_once()).missing == 0  # nothing twice


async def test_a_store_error_leaves_the_row_for_the_next_pass(world: World) -> None:
    row = await pending_row(world, "later.txt")
    await world.store.put(row.object_key, b"12345", "text/plain")
    world.clock.advance(GRACE * 2)
    world.store.available = False
    report = await scanner(world).run_once()
    assert report.store_errors == 1 and await statuses(world) == {"later.txt": ObjectStatus.PENDING}
    world.store.available = True
    assert (await scanner(world).run_once()).present == 1


class RefusingSome(MemoryObjectStore):
    """Refuses the objects under ``refused`` for good (access denied to them alone)."""

    def __init__(self, world: World, refused: set[str]) -> None:
        super().__init__(world.clock)
        self._blobs = world.store._blobs  # the world's objects, seen through this store
        self.refused = refused
        self.heads = 0

    async def head(self, key: str) -> int | None:
        self.heads += 1
        if key in self.refused:
            raise ObjectStoreDefect("S3: AccessDenied")
        return await super().head(key)


async def test_a_row_whose_object_the_store_refuses_holds_up_no_other(world: World) -> None:
    refused = await pending_row(world, "refused.txt")
    await world.store.put(refused.object_key, b"12345", "text/plain")
    after = await pending_row(world, "after.txt")
    await world.store.put(after.object_key, b"12345", "text/plain")
    await pending_row(world, "missing.txt")
    world.clock.advance(GRACE * 2)
    store = RefusingSome(world, {refused.object_key})
    first = await AttachmentScanner(store, world.uow, world.clock, GRACE, REGISTERED_TABLES).run_once()
    assert (first.present, first.missing, first.store_errors, first.more) == (1, 1, 1, False)
    assert await statuses(world) == {"refused.txt": ObjectStatus.PENDING, "after.txt": ObjectStatus.PRESENT}
    store.refused.clear()  # an operator mended the object's permissions
    again = await AttachmentScanner(store, world.uow, world.clock, GRACE, REGISTERED_TABLES).run_once()
    assert (again.present, again.store_errors) == (1, 0)


async def test_a_store_refusing_every_object_is_asked_a_bounded_number_of_times_a_pass(world: World) -> None:
    rows = [await pending_row(world, f"r{i}.txt") for i in range(ATTACHMENT_SCAN_MAX_REFUSALS + 5)]
    world.clock.advance(GRACE * 2)
    store = RefusingSome(world, {row.object_key for row in rows})
    report = await AttachmentScanner(store, world.uow, world.clock, GRACE, REGISTERED_TABLES).run_once()
    assert store.heads == report.store_errors == ATTACHMENT_SCAN_MAX_REFUSALS and not report.more
    assert set((await statuses(world)).values()) == {ObjectStatus.PENDING}


async def test_however_many_rows_the_store_refuses_the_ones_after_them_are_reached(world: World) -> None:
    """Passes resume after the last row looked at: refused rows, oldest first, never hold back
    the rows behind them, and the orphan sweep runs in every pass."""
    refused = []
    for i in range(ATTACHMENT_SCAN_MAX_REFUSALS + 3):
        refused.append(await pending_row(world, f"bad{i}.txt"))
        await world.store.put(refused[-1].object_key, b"12345", "text/plain")
        world.clock.advance(timedelta(seconds=1))  # rows in creation order
    good = await pending_row(world, "good.txt")
    await world.store.put(good.object_key, b"12345", "text/plain")
    orphan = f"cases/contacts/{uuid.uuid4()}/{uuid.uuid4()}/{uuid.uuid4()}/orphan.txt"
    await world.store.put(orphan, b"x", "text/plain")
    world.clock.advance(GRACE * 2)
    store = RefusingSome(world, {row.object_key for row in refused})
    scanner = AttachmentScanner(store, world.uow, world.clock, GRACE, REGISTERED_TABLES)
    first = await scanner.run_once()  # stops at the cap, but sweeps
    assert (first.store_errors, first.present, first.orphans_removed) == (ATTACHMENT_SCAN_MAX_REFUSALS, 0, 1)
    second = await scanner.run_once()  # goes on after them
    assert (second.store_errors, second.present) == (3, 1)
    assert (await statuses(world))["good.txt"] is ObjectStatus.PRESENT
    store.refused.clear()
    third = await scanner.run_once()  # past the end it started again from the oldest: asked again
    assert (third.present, third.store_errors) == (len(refused), 0)


async def test_a_full_batch_runs_again_at_once_after_the_rows_it_looked_at(world: World) -> None:
    bad = await pending_row(world, "bad.txt")
    world.clock.advance(timedelta(seconds=1))
    rows = []
    for i in range(9):
        rows.append(await pending_row(world, f"r{i}.txt"))
        world.clock.advance(timedelta(seconds=1))
        await world.store.put(rows[-1].object_key, b"12345", "text/plain")
    world.clock.advance(GRACE * 2)
    store = RefusingSome(world, {bad.object_key})
    scanner = AttachmentScanner(store, world.uow, world.clock, GRACE, REGISTERED_TABLES, batch_size=5)
    reports = [await scanner.run_once() for _ in range(3)]
    assert [(r.present, r.store_errors, r.more) for r in reports] == [(4, 1, True), (5, 0, True), (0, 0, False)]
    assert set((await statuses(world)).values()) == {ObjectStatus.PRESENT, ObjectStatus.PENDING}


async def test_orphans_older_than_grace_are_removed_and_nothing_else(world: World) -> None:
    kept = await pending_row(world, "kept.txt")
    await world.store.put(kept.object_key, b"12345", "text/plain")
    old_orphans = [f"cases/contacts/{uuid.uuid4()}/{uuid.uuid4()}/{uuid.uuid4()}/o{i}.txt" for i in range(5)]
    for key in old_orphans:
        await world.store.put(key, b"x", "text/plain")
    await world.store.put("elsewhere/not-ours.txt", b"x", "text/plain")
    world.clock.advance(GRACE + timedelta(seconds=1))
    fresh_orphan = f"cases/contacts/{uuid.uuid4()}/{uuid.uuid4()}/{uuid.uuid4()}/fresh.txt"
    await world.store.put(fresh_orphan, b"x", "text/plain")

    sweeper = scanner(world, sweep_keys_per_pass=2)  # the sweep resumes where it stopped
    removed = [(await sweeper.run_once()).orphans_removed for _ in range(4)]
    assert sum(removed) == 5 and max(removed) <= 2
    left = {o.key async for o in world.store.list("")}
    assert left == {kept.object_key, fresh_orphan, "elsewhere/not-ours.txt"}
    assert await statuses(world) == {"kept.txt": ObjectStatus.PRESENT}


async def test_backlog_reports_pending_rows_on_the_database_clock(world: World) -> None:
    await pending_row(world, "a.txt")
    world.clock.advance(timedelta(minutes=10))
    await pending_row(world, "b.txt")
    (stats,) = (await scanner(world).backlog()).values()
    assert stats.pending == 2 and stats.now - stats.oldest_pending_created_at == timedelta(minutes=10)  # type: ignore[operator]


async def test_a_full_batch_asks_for_another_pass_at_once_and_a_store_error_does_not(world: World) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        await pending_row(world, name)
    world.clock.advance(GRACE * 2)
    full = await scanner(world, batch_size=2).run_once()
    assert full.more and full.missing == 2
    rest = await scanner(world, batch_size=2).run_once()
    assert not rest.more and rest.missing == 1
    await pending_row(world, "d.txt")
    await pending_row(world, "e.txt")
    world.clock.advance(GRACE * 2)
    world.store.available = False
    assert not (await scanner(world, batch_size=2).run_once()).more


class _LandsThenTimesOut(MemoryObjectStore):
    """The first put stores the blob and then reports a timeout (the object store got it; the
    answer was lost); later puts behave."""

    def __init__(self, inner: MemoryObjectStore) -> None:
        self.inner = inner
        self.failed_once = False

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        await self.inner.put(key, data, content_type)
        if not self.failed_once:
            self.failed_once = True
            raise ObjectStoreUnavailable("the put timed out")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _DeletesWhenLetGo(MemoryObjectStore):
    """A store whose deletes wait until the test lets them go, so a sweep that has decided
    what to delete can be held there while an upload runs."""

    def __init__(self, inner: MemoryObjectStore) -> None:
        self.inner = inner
        self.deciding = asyncio.Event()
        self.go = asyncio.Event()

    async def delete(self, key: str) -> None:
        self.deciding.set()
        await self.go.wait()
        await self.inner.delete(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_the_sweep_never_deletes_the_blob_of_a_retry_that_made_its_row_again(world: World) -> None:
    """Attempt 1's put lands but reports a timeout: its row is compensated away and its blob is
    an orphan. Long after, the client retries with the same Idempotency-Key (the same attachment
    id) while a sweep that has already judged that orphan is about to delete it."""
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    attachment_id = uuid.uuid4()
    upload = {"file_name": "note.txt", "content_type": "text/plain", "body": b"hello", "attachment_type": None}
    with pytest.raises(ObjectStoreUnavailable):
        await world.upload(store=_LandsThenTimesOut(world.store))(
            ann, case.id, contact.id, attachment_id=attachment_id, **upload
        )
    assert await world.attachment_rows() == []
    world.clock.advance(GRACE + timedelta(seconds=1))

    held = _DeletesWhenLetGo(world.store)
    sweep = asyncio.create_task(AttachmentScanner(held, world.uow, world.clock, GRACE, REGISTERED_TABLES).run_once())
    await held.deciding.wait()  # the orphan is judged; its delete waits
    retried = await world.upload()(ann, case.id, contact.id, attachment_id=attachment_id, **upload)
    held.go.set()
    report = await sweep
    assert report.orphans_removed == 1
    assert retried.object_status is ObjectStatus.PRESENT
    assert await world.store.head(retried.object_key) == 5  # the retry's blob is there


async def failed_rows(world: World, count: int) -> list[Attachment]:
    rows = [await pending_row(world, f"odd{n}.txt") for n in range(count)]
    for row in rows:
        await world.store.put(row.object_key, b"1234567", "text/plain")
    world.clock.advance(GRACE + timedelta(seconds=1))
    assert (await scanner(world).run_once()).mismatched == count
    return rows


async def test_a_discard_with_the_store_down_deletes_the_row_and_the_sweep_removes_its_object(world: World) -> None:
    [odd] = await failed_rows(world, 1)
    failed = FailedAttachments(world.store, world.uow, REGISTERED_TABLES)
    [listed] = await failed.failed(10)
    assert (listed.table, listed.row.id, listed.row.size) == ("contact_attachments", odd.id, 5)

    world.store.available = False
    [done] = [d async for d in failed.discard([odd.id, odd.id])]  # an id given twice is discarded once
    assert (
        done.attachment == listed
        and done.object_left == "object store is unavailable: memory object store switched off"
    )
    assert await statuses(world) == {} and await failed.failed(10) == []

    world.store.available = True
    assert await world.store.head(odd.object_key) == 7  # still there, and no row points at it
    world.clock.advance(GRACE + timedelta(seconds=1))
    assert (await scanner(world).run_once()).orphans_removed == 1
    assert await world.store.head(odd.object_key) is None
    assert [d async for d in failed.discard([odd.id])] == []  # discarded already: nothing to do


class RefusingDeletes(MemoryObjectStore):
    """A store whose credentials may read and list but not delete."""

    def __init__(self, clock: Any) -> None:
        super().__init__(clock)
        self.deletes = 0

    async def delete(self, key: str) -> None:
        self.deletes += 1
        raise ObjectStoreDefect("S3: AccessDenied")


async def test_a_store_that_refuses_deletes_is_asked_once_and_every_row_is_still_discarded(world: World) -> None:
    rows = await failed_rows(world, 3)
    store = RefusingDeletes(world.clock)
    discarded = [d async for d in FailedAttachments(store, world.uow, REGISTERED_TABLES).discard([r.id for r in rows])]
    assert sorted(d.attachment.row.id for d in discarded) == sorted(r.id for r in rows)
    refused = "object store refused the operation: S3: AccessDenied"
    assert [d.object_left for d in discarded] == [refused, *[f"not tried after an earlier failure: {refused}"] * 2]
    assert store.deletes == 1 and await statuses(world) == {}


async def test_a_discard_stopped_before_the_row_went_leaves_it_listed(world: World) -> None:
    """Stopped while its object is deleted (Ctrl-C), a row is neither deleted nor reported: it
    stays failed and listed, to be discarded again."""
    [odd] = await failed_rows(world, 1)

    class Interrupted(MemoryObjectStore):
        async def delete(self, key: str) -> None:
            await super().delete(key)
            raise KeyboardInterrupt

    failed = FailedAttachments(Interrupted(world.clock), world.uow, REGISTERED_TABLES)
    with pytest.raises(KeyboardInterrupt):
        [d async for d in failed.discard([odd.id])]
    assert [f.row.id for f in await failed.failed(10)] == [odd.id]
    [done] = [d async for d in FailedAttachments(world.store, world.uow, REGISTERED_TABLES).discard([odd.id])]
    assert done.object_left is None and await statuses(world) == {}
