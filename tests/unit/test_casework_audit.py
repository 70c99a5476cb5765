"""The audit entries of the two-phase upload and of refusals, on the memory adapters: the upload's
entry commits with its row, a compensated upload keeps it, an upload whose entry cannot be
written leaves nothing, and a refusal is recorded even inside a request's held transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from craig.adapters.memory.audit import MemoryAuditRepository
from craig.domain.access import Principal, Role
from craig.domain.attachments import Attachment
from craig.domain.audit import AuditAction, AuditEntry, AuditOutcome
from craig.domain.audit_query import AuditFilter
from craig.domain.cases import Case
from craig.domain.contacts import Contact
from craig.domain.errors import Forbidden, NotFound
from craig.ports.errors import DatabaseUnavailable, ObjectStoreUnavailable
from craig.usecases.cases import AssignWorker, GetCase
from tests.support.casework import World, person
from tests.support.files import png_bytes

pytestmark = pytest.mark.unit

PNG = png_bytes()


@pytest.fixture
def world() -> World:
    return World.new()


async def entries(world: World) -> list[AuditEntry]:
    uow = world.uow()
    async with uow:
        return list((await uow.audit.list(AuditFilter(), 1000)).items)


async def upload(world: World, who: Principal, case: Case, contact: Contact, **kw: Any) -> Attachment:
    return await world.upload(**kw)(
        who, case.id, contact.id, file_name="p.png", content_type="image/png", body=PNG, attachment_type=None
    )


async def test_an_upload_records_its_entry_with_its_row(world: World) -> None:
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    before = {e.id for e in await entries(world)}
    attachment = await upload(world, ann, case, contact)
    [entry] = [e for e in await entries(world) if e.id not in before]
    assert (entry.action, entry.resource_type, entry.resource_id, entry.case_id, entry.outcome) == (
        AuditAction.UPLOAD,
        "attachment",
        str(attachment.id),
        case.id,
        AuditOutcome.ALLOWED,
    )


async def test_a_compensated_upload_keeps_its_entry(world: World) -> None:
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    world.store.available = False
    with pytest.raises(ObjectStoreUnavailable):
        await upload(world, ann, case, contact)
    assert await world.attachment_rows() == []
    [failed] = [p for t, p in await world.events("cases.contact_attachment_upload_failed")]
    uploads = [e for e in await entries(world) if e.action is AuditAction.UPLOAD]
    assert [(e.resource_id, e.outcome) for e in uploads] == [(failed["attachment_id"], AuditOutcome.ALLOWED)]


async def test_an_upload_whose_entry_cannot_be_written_leaves_no_row_no_blob_no_event(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann = person()
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    before = await entries(world)

    async def full(self: MemoryAuditRepository, entries: Sequence[AuditEntry]) -> list[AuditEntry]:
        raise DatabaseUnavailable("no space left")

    monkeypatch.setattr(MemoryAuditRepository, "append", full)
    with pytest.raises(DatabaseUnavailable):
        await upload(world, ann, case, contact)
    monkeypatch.undo()
    assert await world.attachment_rows() == []
    assert await world.events("cases.contact_attachment") == []
    assert [stored async for stored in world.store.list("")] == []
    assert await entries(world) == before


async def test_a_refusal_inside_a_held_request_transaction_commits_with_it(world: World) -> None:
    """The idempotency layer holds the request's transaction: the refused block rolls back to its
    savepoint, and the denial is kept in the request's transaction (committed with its answer)."""
    ann, bob = person(), person(name="Bob")
    case = await world.case(ann)
    contact = await world.contact(ann, case)
    request = world.uow()
    async with request:
        with pytest.raises(NotFound):
            await upload(world, bob, case, contact, uow=request)
        await request.commit()
    [denied] = [e for e in await entries(world) if e.outcome is AuditOutcome.DENIED]
    assert (denied.action, denied.actor, denied.case_id, denied.resource_id) == (
        AuditAction.UPLOAD,
        bob.sub,
        case.id,
        None,
    )


async def test_a_role_refusal_is_recorded_before_the_case_is_looked_up(world: World) -> None:
    ann = person()
    case = await world.case(ann)
    with pytest.raises(Forbidden):
        await AssignWorker(world.uow(), world.clock)(ann, case.id, ann.sub)
    with pytest.raises(NotFound):
        await GetCase(world.uow())(person(Role.CASEWORKER, "Bob"), case.id)
    denied = [(e.action, e.actor_name) for e in await entries(world) if e.outcome is AuditOutcome.DENIED]
    assert sorted(denied) == [(AuditAction.ASSIGN, "Ann"), (AuditAction.READ, "Bob")]
