"""Cases and contacts: validation, visibility (404, never 403), assignment rights, events."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from craig.domain.access import Role
from craig.domain.contacts import ContactType
from craig.domain.errors import Forbidden, InvalidInput, NotFound
from craig.domain.pages import PageRequest
from craig.usecases.cases import AssignWorker, GetCase, GetContact, ListCases, ListContacts, RecordContact
from tests.support.casework import T0, World, person

pytestmark = pytest.mark.unit


@pytest.fixture
def world() -> World:
    return World.new()


async def test_a_case_worker_sees_own_and_assigned_cases_only(world: World) -> None:
    ann, bob, sup = person(), person(name="Bob"), person(Role.SUPERVISOR)
    mine = await world.case(ann)
    theirs = await world.case(bob)
    with pytest.raises(NotFound):
        await GetCase(world.uow())(ann, theirs.id)
    with pytest.raises(Forbidden):
        await AssignWorker(world.uow(), world.clock)(ann, theirs.id, ann.sub)
    case, assigned = await AssignWorker(world.uow(), world.clock)(sup, theirs.id, ann.sub)
    assert assigned and case.assigned_workers == {ann.sub}
    _, again = await AssignWorker(world.uow(), world.clock)(sup, theirs.id, ann.sub)
    assert not again
    assert (await GetCase(world.uow())(ann, theirs.id)).id == theirs.id
    page = await ListCases(world.uow())(ann, PageRequest())
    assert {c.id for c in page.items} == {mine.id, theirs.id} and page.total == 2
    assert (await ListCases(world.uow())(bob, PageRequest())).total == 1
    assigned_events = await world.events("cases.case_assigned")
    assert len(assigned_events) == 1 and assigned_events[0][1]["worker_sub"] == str(ann.sub)
    with pytest.raises(NotFound):
        await AssignWorker(world.uow(), world.clock)(sup, uuid.uuid4(), ann.sub)


async def test_contacts_are_validated_and_listed_most_recent_first(world: World) -> None:
    ann = person()
    case = await world.case(ann)
    record = RecordContact(world.uow(), world.clock)
    for occurred, kind in [(T0 - timedelta(days=2), "phone_call"), (T0 - timedelta(days=1), "HOME_VISIT")]:
        await record(ann, case.id, contact_type=kind, occurred_at=occurred, summary="  Spoke with the mother.  ")
    page = await ListContacts(world.uow())(ann, case.id, PageRequest(per_page=1))
    assert page.total == 2 and page.items[0].contact_type is ContactType.HOME_VISIT
    assert page.items[0].summary == "Spoke with the mother." and page.items[0].worker_name == "Ann"
    contact = await GetContact(world.uow())(ann, case.id, page.items[0].id)
    assert contact == page.items[0]

    for bad in [
        {"contact_type": "séance", "occurred_at": T0, "summary": "x"},
        {"contact_type": "other", "occurred_at": T0 + timedelta(hours=1), "summary": "x"},
        {"contact_type": "other", "occurred_at": T0.replace(tzinfo=None), "summary": "x"},
        {"contact_type": "other", "occurred_at": T0, "summary": "   "},
        {"contact_type": "other", "occurred_at": T0, "summary": "nul\x00byte"},
        {"contact_type": "other", "occurred_at": T0, "summary": "x" * 20_001},
    ]:
        with pytest.raises(InvalidInput):
            await record(ann, case.id, **bad)
    with pytest.raises(NotFound):
        await record(person(), case.id, contact_type="other", occurred_at=T0, summary="x")
    with pytest.raises(NotFound):
        await GetContact(world.uow())(ann, (await world.case(ann)).id, contact.id)
    events = await world.events("cases.contact_recorded")
    assert len(events) == 2 and all("summary" not in payload for _, payload in events)
