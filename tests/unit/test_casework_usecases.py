"""The casework use cases on the memory adapters: screening, roles, the case lifecycle, closed
cases, preconditions, foster-home changes and events."""

from __future__ import annotations

import uuid
from datetime import date, timedelta

import attrs
import pytest

from craig.domain.access import Role
from craig.domain.case_lifecycle import CaseClosed, CaseDetails, CaseHasActivePlacement
from craig.domain.case_search import CaseQuery
from craig.domain.errors import Forbidden, NotFound
from craig.domain.foster_home_changes import CapacityBelowOccupancy, FosterHomeChange, FosterHomeHasActivePlacements
from craig.domain.intake import Referral, new_child, new_referral, new_reporter
from craig.domain.keyset import Keyset
from craig.domain.placement_changes import NewPlacement, PlacementPatch
from craig.domain.placements import FosterHomeClosed, PlacementStatus
from craig.domain.screening import ReferralAlreadyScreened, ResponseTimes
from craig.domain.versions import IfMatch, StaleVersion
from craig.usecases.case_lifecycle.close_case import CloseCase
from craig.usecases.case_lifecycle.reopen_case import ReopenCase
from craig.usecases.case_lifecycle.search_cases import SearchCases
from craig.usecases.case_lifecycle.unassign_worker import UnassignWorker
from craig.usecases.case_lifecycle.update_case import UpdateCase
from craig.usecases.cases import AssignWorker, GetCase, RecordContact
from craig.usecases.foster_homes.update_foster_home import UpdateFosterHome
from craig.usecases.placements import CreateFosterHome, CreatePlacement, UpdatePlacement
from craig.usecases.referrals.get_referral import GetReferral
from craig.usecases.referrals.list_referrals import ListReferrals
from craig.usecases.referrals.referral_backlog import ReferralBacklog
from craig.usecases.referrals.screen_referral import ScreenIn, ScreenOut, ScreenReferral
from tests.support.casework import T0, World, person

pytestmark = pytest.mark.unit

ANY = IfMatch()
TIMES = ResponseTimes()


@pytest.fixture
def world() -> World:
    return World.new()


async def a_referral(world: World, priority: str | None = "high") -> Referral:
    referral = attrs.evolve(
        new_referral(
            id=uuid.uuid4(),
            reporter=new_reporter("Rita", "+44 20 7946 0000", None),
            child=new_child("Tom", 4),
            concern="bruises",
            location=None,
            now=world.clock.now(),
        ),
        priority=priority,
    )
    uow = world.uow()
    async with uow:
        await uow.referrals.add(referral)
        await uow.commit()
    return referral


def screen(world: World) -> ScreenReferral:
    return ScreenReferral(world.uow(), world.clock, TIMES)


async def test_a_caseworker_may_not_touch_the_queue(world: World) -> None:
    referral = await a_referral(world)
    worker = person(Role.CASEWORKER)
    with pytest.raises(Forbidden):
        await ListReferrals(world.uow(), world.clock, TIMES)(worker, Keyset())
    with pytest.raises(Forbidden):
        await GetReferral(world.uow(), world.clock, TIMES)(worker, referral.id)
    with pytest.raises(Forbidden):
        await screen(world)(worker, referral.id, ScreenOut(reason="no"), ANY)


async def test_screening_in_opens_a_linked_case_for_the_assigned_worker_only(world: World) -> None:
    referral = await a_referral(world)
    screener, worker = person(Role.SCREENER, "Sam"), person(Role.CASEWORKER, "Wes")
    done = await screen(world)(
        screener, referral.id, ScreenIn(title="Tom's family", family_name="Okafor", assign_to=worker.sub), ANY
    )
    case = done.case
    assert case is not None and case.referral_id == referral.id and case.assigned_workers == {worker.sub}
    assert done.entry.referral.case_id == case.id and done.entry.referral.status == "screened_in"
    assert (await GetCase(world.uow())(worker, case.id)).id == case.id
    with pytest.raises(NotFound):  # the screener opened it, yet sees only what it is assigned to
        await GetCase(world.uow())(screener, case.id)
    with pytest.raises(ReferralAlreadyScreened) as again:
        await screen(world)(person(Role.SUPERVISOR), referral.id, ScreenOut(reason="late"), ANY)
    assert again.value.problem_extra["screened_by"] == str(screener.sub)
    types = [kind for kind, _ in await world.events()]
    assert types[-3:] == ["cases.case_opened", "cases.case_assigned", "intake.referral_screened_in"]


async def test_a_screener_may_not_assign_itself_the_case_it_opens(world: World) -> None:
    referral = await a_referral(world)
    screener = person(Role.SCREENER, "Sam")
    with pytest.raises(Forbidden, match="does not keep the cases it opens"):
        await screen(world)(screener, referral.id, ScreenIn(title="Tom's family", assign_to=screener.sub), ANY)
    assert (await GetReferral(world.uow(), world.clock, TIMES)(screener, referral.id)).referral.status == "new"
    sup = person(Role.SUPERVISOR, "Sue")  # one who sees every case anyway may take it
    done = await screen(world)(sup, referral.id, ScreenIn(title="Tom's family", assign_to=sup.sub), ANY)
    assert done.case is not None and done.case.assigned_workers == {sup.sub}


async def test_screening_out_needs_a_reason_and_a_fresh_version(world: World) -> None:
    referral = await a_referral(world, None)
    sup = person(Role.SUPERVISOR)
    with pytest.raises(StaleVersion):
        await screen(world)(sup, referral.id, ScreenOut(reason="noise"), IfMatch(frozenset({7})))
    done = await screen(world)(sup, referral.id, ScreenOut(reason=" neighbour dispute "), IfMatch(frozenset({1})))
    assert done.case is None and done.entry.referral.decision_reason == "neighbour dispute"
    with pytest.raises(NotFound):
        await screen(world)(sup, uuid.uuid4(), ScreenOut(reason="x"), ANY)
    backlog = await ReferralBacklog(world.uow, world.clock, TIMES)()
    assert all(b.count == 0 for b in backlog.priorities) and backlog.now == world.clock.now()


async def test_queue_entries_show_deadline_and_overdue(world: World) -> None:
    urgent = await a_referral(world, "urgent")
    world.clock.advance(timedelta(hours=25))
    low = await a_referral(world, "low")
    page = await ListReferrals(world.uow(), world.clock, TIMES)(person(Role.SCREENER), Keyset())
    assert [(e.referral.id, e.overdue) for e in page.items] == [(urgent.id, True), (low.id, False)]
    assert page.items[0].respond_by == urgent.received_at + timedelta(hours=24)
    backlog = {b.priority: b for b in (await ReferralBacklog(world.uow, world.clock, TIMES)()).priorities}
    assert (backlog["urgent"].count, backlog["urgent"].overdue, backlog["low"].count) == (1, 1, 1)


async def test_the_lifecycle_of_a_case(world: World) -> None:
    owner, sup = person(), person(Role.SUPERVISOR, "Sue")
    case = await world.case(owner)
    stale = IfMatch(frozenset({case.version}))
    renamed = await UpdateCase(world.uow(), world.clock)(owner, case.id, CaseDetails(family_name="Doe-Roe"), stale)
    assert renamed.version == 2 and renamed.family_name == "Doe-Roe"
    with pytest.raises(StaleVersion) as error:
        await UpdateCase(world.uow(), world.clock)(owner, case.id, CaseDetails(title="again"), stale)
    assert error.value.current_version == 2
    closed = await CloseCase(world.uow(), world.clock)(owner, case.id, "moved away", IfMatch(frozenset({2})))
    assert closed.status.value == "closed" and closed.version == 3
    with pytest.raises(CaseClosed):
        await world.contact(owner, closed)
    with pytest.raises(CaseClosed):
        await AssignWorker(world.uow(), world.clock)(sup, case.id, uuid.uuid4())
    home = await CreateFosterHome(world.uow(), world.clock)(sup, name="Oak", capacity=2)
    command = NewPlacement.parse(case_id=case.id, foster_home_id=home.id, status="planned", start_date=date(2026, 3, 1))
    with pytest.raises(CaseClosed):
        await CreatePlacement(world.uow(), world.clock)(owner, command)
    with pytest.raises(Forbidden):
        await ReopenCase(world.uow(), world.clock)(owner, case.id, "back", None)
    reopened = await ReopenCase(world.uow(), world.clock)(sup, case.id, "family returned", None)
    assert reopened.is_open and reopened.version == 4
    await RecordContact(world.uow(), world.clock)(
        owner, case.id, contact_type="phone_call", occurred_at=T0, summary="called"
    )
    types = [kind for kind, _ in await world.events("cases.case_")]
    assert types[-3:] == ["cases.case_updated", "cases.case_closed", "cases.case_reopened"]


async def test_a_case_with_an_active_placement_does_not_close(world: World) -> None:
    owner, sup = person(), person(Role.SUPERVISOR)
    case = await world.case(owner)
    home = await CreateFosterHome(world.uow(), world.clock)(sup, name="Oak", capacity=1)
    command = NewPlacement.parse(case_id=case.id, foster_home_id=home.id, status="active", start_date=date(2026, 3, 1))
    placement = await CreatePlacement(world.uow(), world.clock)(owner, command)
    with pytest.raises(CaseHasActivePlacement):
        await CloseCase(world.uow(), world.clock)(owner, case.id, "done", ANY)
    end = PlacementPatch.parse(status="ended", end_reason="reunified", foster_home_id=None)
    with pytest.raises(StaleVersion):
        await UpdatePlacement(world.uow(), world.clock)(owner, placement.id, end, IfMatch(frozenset({5})))
    ended = await UpdatePlacement(world.uow(), world.clock)(owner, placement.id, end, IfMatch(frozenset({1})))
    assert ended.status is PlacementStatus.ENDED and ended.version == 2
    assert (await CloseCase(world.uow(), world.clock)(owner, case.id, "done", ANY)).status.value == "closed"


async def test_unassign_and_search(world: World) -> None:
    owner, sup, worker = person(), person(Role.SUPERVISOR), person(Role.CASEWORKER, "Wes")
    case = await world.case(owner)
    await AssignWorker(world.uow(), world.clock)(sup, case.id, worker.sub)
    found = await SearchCases(world.uow())(worker, CaseQuery.parse(family_name=" doe "), Keyset())
    assert [c.id for c in found.items] == [case.id]
    with pytest.raises(Forbidden):
        await UnassignWorker(world.uow(), world.clock)(owner, case.id, worker.sub)
    await UnassignWorker(world.uow(), world.clock)(sup, case.id, worker.sub)
    with pytest.raises(NotFound):
        await UnassignWorker(world.uow(), world.clock)(sup, case.id, worker.sub)
    assert (await SearchCases(world.uow())(worker, CaseQuery(), Keyset())).items == []


async def test_foster_home_changes_keep_the_occupancy_rules(world: World) -> None:
    owner, sup = person(), person(Role.SUPERVISOR)
    home = await CreateFosterHome(world.uow(), world.clock)(sup, name="Oak", capacity=2)
    for _ in range(2):
        case = await world.case(owner)
        command = NewPlacement.parse(
            case_id=case.id, foster_home_id=home.id, status="active", start_date=date(2026, 3, 1)
        )
        await CreatePlacement(world.uow(), world.clock)(owner, command)
    update = UpdateFosterHome(world.uow(), world.clock)
    with pytest.raises(Forbidden):
        await update(owner, home.id, FosterHomeChange(capacity=3), ANY)
    with pytest.raises(CapacityBelowOccupancy):
        await UpdateFosterHome(world.uow(), world.clock)(sup, home.id, FosterHomeChange(capacity=1), ANY)
    with pytest.raises(StaleVersion):
        await UpdateFosterHome(world.uow(), world.clock)(
            sup, home.id, FosterHomeChange(capacity=3), IfMatch(frozenset({1}))
        )
    empty = await CreateFosterHome(world.uow(), world.clock)(sup, name="Elm", capacity=1)
    with pytest.raises(FosterHomeHasActivePlacements):
        await UpdateFosterHome(world.uow(), world.clock)(
            sup, home.id, FosterHomeChange.parse(name=None, capacity=None, status="closed"), ANY
        )
    closed = await UpdateFosterHome(world.uow(), world.clock)(
        sup, empty.id, FosterHomeChange.parse(name=" Elm House ", capacity=None, status="closed"), ANY
    )
    assert (closed.name, closed.status.value, closed.version) == ("Elm House", "closed", 2)
    other = await world.case(owner)
    planned = NewPlacement.parse(
        case_id=other.id, foster_home_id=empty.id, status="planned", start_date=date(2026, 3, 1)
    )
    with pytest.raises(FosterHomeClosed):
        await CreatePlacement(world.uow(), world.clock)(owner, planned)
