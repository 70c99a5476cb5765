"""Contract of the keyset pages of the older lists on every adapter: contacts, attachments,
partners and rule sets follow their list's order, and rows added between pages are neither
repeated nor make the pages skip one that existed."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from craig.domain.attachments import new_attachment
from craig.domain.cases import new_case
from craig.domain.contacts import new_contact
from craig.domain.keyset import Keyset, KeysetPage
from craig.usecases.ids import new_id
from tests.support.backends import Backend
from tests.support.exchange_data import a_partner

pytestmark = pytest.mark.contract

T0 = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)
OWNER = uuid.uuid4()


async def in_pages(
    backend: Backend, read: Callable[[Any, Keyset], Awaitable[KeysetPage[Any]]], between: Callable[[], Awaitable[None]]
) -> list[Any]:
    """Every item, two per page, calling ``between`` after each page."""
    seen: list[Any] = []
    keyset = Keyset(limit=2)
    uow = backend.uow()
    while True:
        async with uow:
            page = await read(uow, keyset)
        seen.extend(page.items)
        await between()
        if page.next_after is None:
            return seen
        keyset = Keyset(limit=2, after=page.next_after)


async def test_contacts_most_recent_first(backend: Backend) -> None:
    case = new_case(id=uuid.uuid4(), title="t", family_name=None, opened_at=T0, created_by=OWNER, now=T0)
    minutes = iter(range(100))

    async def contact(at: datetime) -> uuid.UUID:
        made = new_contact(
            id=new_id(), case_id=case.id, contact_type="phone_call", occurred_at=at, summary="s",
            created_by=OWNER, worker_name="Ann", now=T0,
        )  # fmt: skip
        uow = backend.uow()
        async with uow:
            await uow.contacts.add(made)
            await uow.commit()
        return made.id

    uow = backend.uow()
    async with uow:
        await uow.cases.add(case)
        await uow.commit()
    first = [await contact(T0 - timedelta(hours=n)) for n in range(5)]

    async def newer() -> None:
        await contact(T0 + timedelta(minutes=next(minutes)))  # before the cursor: not on a later page

    seen = await in_pages(backend, lambda u, k: u.contacts.page_for_case(case.id, k), newer)
    assert [c.id for c in seen] == first


async def test_attachments_oldest_first(backend: Backend) -> None:
    case = new_case(id=uuid.uuid4(), title="t", family_name=None, opened_at=T0, created_by=OWNER, now=T0)
    contact = new_contact(
        id=new_id(), case_id=case.id, contact_type="phone_call", occurred_at=T0, summary="s",
        created_by=OWNER, worker_name="Ann", now=T0,
    )  # fmt: skip
    uow = backend.uow()
    async with uow:
        await uow.cases.add(case)
        await uow.contacts.add(contact)
        await uow.commit()

    async def attachment() -> uuid.UUID:
        draft = new_attachment(
            id=new_id(), case_id=case.id, contact_id=contact.id, attachment_type=None, file_name="a.pdf",
            content_type="application/pdf", file_size=1, uploaded_by=OWNER, worker_name="Ann", now=T0,
        )  # fmt: skip
        uow = backend.uow()
        async with uow:
            stored = await uow.attachments.add(draft)
            await uow.commit()
        await backend.sleep(0.002)  # created_at is the database clock's now: keep them apart
        return stored.id

    first = [await attachment() for _ in range(5)]
    added: list[uuid.UUID] = []

    async def later() -> None:
        added.append(await attachment())  # after everything read so far: it comes last

    seen = [a.id for a in await in_pages(backend, lambda u, k: u.attachments.page_for_contact(contact.id, k), later)]
    assert seen[:5] == first and len(seen) == len(set(seen)) and set(seen[5:]) <= set(added)


async def test_partners_and_rule_sets_by_name(backend: Backend) -> None:
    uow = backend.uow()
    async with uow:
        for name in ["p-c", "p-a", "p-e", "p-b", "p-d"]:
            await uow.partners.add(a_partner(name=name))
        for name in ["r-c", "r-a", "r-b"]:
            await uow.rule_sets.add_version(name, [{"when": {"all": []}, "then": "low"}], OWNER, T0)
        await uow.rule_sets.add_version("r-a", [{"when": {"all": []}, "then": "high"}], OWNER, T0)
        await uow.commit()

    async def nothing() -> None:
        return None

    partners = await in_pages(backend, lambda u, k: u.partners.list_page(k), nothing)
    assert [p.name for p in partners] == ["p-a", "p-b", "p-c", "p-d", "p-e"]
    rule_sets = await in_pages(backend, lambda u, k: u.rule_sets.latest_page(k), nothing)
    named = [(s.name, s.version) for s in rule_sets if s.name.startswith("r-")]
    assert named == [("r-a", 2), ("r-b", 1), ("r-c", 1)]
