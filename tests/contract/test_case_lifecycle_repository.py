"""Contract of the case repository's lifecycle and search on every adapter: closure, versions,
one case per referral, filters, sorts, keyset pages, and the family name's blind index."""

from __future__ import annotations

import base64
import os
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from craig.adapters.crypto.aesgcm import FieldEncryptor
from craig.domain.access import Principal, Role
from craig.domain.case_lifecycle import CaseDetails, close, update_details
from craig.domain.case_search import CaseQuery
from craig.domain.cases import Case, CaseStatus, new_case
from craig.domain.intake import new_child, new_referral, new_reporter
from craig.domain.keyset import Keyset
from craig.ports.cases import ONE_CASE_PER_REFERRAL
from craig.ports.errors import ConstraintViolation
from tests.support.backends import Backend
from tests.support.sealed import raw_rows, uow_with

pytestmark = pytest.mark.contract

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SUPERVISOR = Principal(uuid.uuid4(), "Sue", Role.SUPERVISOR)


def a_case(owner: uuid.UUID, n: int, family: str | None = "Doe", **kw: object) -> Case:
    return new_case(
        id=uuid.uuid4(),
        title=f"case {n}",
        family_name=family,
        opened_at=T0 + timedelta(days=n),
        created_by=owner,
        now=T0 + timedelta(minutes=n),
        **kw,  # type: ignore[arg-type]
    )


async def add(backend: Backend, *cases: Case) -> None:
    uow = backend.uow()
    async with uow:
        for case in cases:
            await uow.cases.add(case)
        await uow.commit()


async def search(backend: Backend, principal: Principal, query: CaseQuery, limit: int = 50) -> list[Case]:
    """Every page, one after the other."""
    found: list[Case] = []
    keyset = Keyset(limit=limit)
    uow = backend.uow()
    while True:
        async with uow:
            page = await uow.cases.search(principal, query, keyset)
        found.extend(page.items)
        if page.next_after is None:
            return found
        keyset = Keyset(limit=limit, after=page.next_after)


async def test_closure_versions_and_locked_reads_round_trip(backend: Backend) -> None:
    owner = uuid.uuid4()
    case = a_case(owner, 0)
    await add(backend, case)
    uow = backend.uow()
    async with uow:
        locked = await uow.cases.get_for_update(case.id)
        assert locked == case and locked.version == 1 and locked.status is CaseStatus.OPEN
        renamed, _ = update_details(locked, CaseDetails(title="renamed"), by=owner, now=T0 + timedelta(hours=1))
        closed, _ = close(renamed, "family moved away", active_placements=0, by=owner, now=T0 + timedelta(hours=2))
        await uow.cases.save(closed)
        await uow.commit()
    async with uow:
        stored = await uow.cases.get_for_share(case.id)
    assert stored == closed
    assert (stored.version, stored.title, stored.close_reason) == (3, "renamed", "family moved away")
    raw = {row["id"]: row for row in await raw_rows(backend, "cases")}[case.id]
    assert "family moved away" not in str(raw["close_reason"]) and raw["status"] == "closed"


async def test_assignments_make_the_case_newer_and_unassign_says_whether_it_removed_one(backend: Backend) -> None:
    case = a_case(uuid.uuid4(), 0)
    worker = uuid.uuid4()
    await add(backend, case)
    uow = backend.uow()
    async with uow:
        assert await uow.cases.assign(case.id, worker, SUPERVISOR.sub, T0 + timedelta(hours=1))
        assert not await uow.cases.assign(case.id, worker, SUPERVISOR.sub, T0 + timedelta(hours=2))
        await uow.commit()
    async with uow:
        assigned = await uow.cases.get(case.id)
        assert assigned is not None and assigned.assigned_workers == {worker}
        # The time the caller gives: the use case answers the case with it under the new ETag.
        assert (assigned.version, assigned.updated_at) == (2, T0 + timedelta(hours=1))
        assert await uow.cases.unassign(case.id, worker, T0 + timedelta(hours=3))
        assert not await uow.cases.unassign(case.id, worker, T0 + timedelta(hours=4))
        assert not await uow.cases.unassign(case.id, uuid.uuid4(), T0 + timedelta(hours=4))
        await uow.commit()
    async with uow:
        unassigned = await uow.cases.get(case.id)
    assert unassigned is not None and not unassigned.assigned_workers
    assert (unassigned.version, unassigned.updated_at) == (3, T0 + timedelta(hours=3))
    async with uow:
        unassigned = await uow.cases.get(case.id)
    assert unassigned is not None and unassigned.version == 3 and not unassigned.assigned_workers


async def test_a_referral_opens_at_most_one_case(backend: Backend) -> None:
    referral = new_referral(
        id=uuid.uuid4(),
        reporter=new_reporter("R", None, None),
        child=new_child("C", 3),
        concern="c",
        location=None,
        now=T0,
    )
    uow = backend.uow()
    async with uow:
        await uow.referrals.add(referral)
        await uow.cases.add(a_case(uuid.uuid4(), 0, referral_id=referral.id))
        await uow.commit()
    with pytest.raises(ConstraintViolation) as error:
        async with uow:
            await uow.cases.add(a_case(uuid.uuid4(), 1, referral_id=referral.id))
            await uow.commit()
    assert error.value.constraint == ONE_CASE_PER_REFERRAL


async def test_filters_combine_after_visibility(backend: Backend) -> None:
    ann, bob = uuid.uuid4(), uuid.uuid4()
    cases = [
        a_case(ann, 0, "  DE  la Cruz "),
        a_case(ann, 1, "Doe"),
        a_case(bob, 2, "de la cruz"),
        a_case(bob, 3, None),
        a_case(bob, 4, "Straße"),
    ]
    closed, _ = close(cases[1], "done", active_placements=0, by=ann, now=T0)
    await add(backend, *cases[:1], closed, *cases[2:])
    uow = backend.uow()
    async with uow:
        await uow.cases.assign(cases[2].id, ann, SUPERVISOR.sub, T0)
        await uow.commit()
    worker = Principal(ann, "Ann", Role.CASEWORKER)
    screener = Principal(bob, "Bob", Role.SCREENER)

    def ids(found: list[Case]) -> list[uuid.UUID]:
        return [case.id for case in found]

    assert ids(await search(backend, worker, CaseQuery())) == [cases[2].id, cases[1].id, cases[0].id]
    assert ids(await search(backend, screener, CaseQuery())) == []  # a screener keeps none it opened
    by_name = CaseQuery.parse(family_name="De La  CRUZ")
    assert ids(await search(backend, SUPERVISOR, by_name)) == [cases[2].id, cases[0].id]
    assert ids(await search(backend, worker, CaseQuery.parse(family_name="strasse"))) == []
    assert ids(await search(backend, SUPERVISOR, CaseQuery.parse(family_name="STRASSE"))) == [cases[4].id]
    assert ids(await search(backend, SUPERVISOR, CaseQuery.parse(status="closed"))) == [cases[1].id]
    assert ids(await search(backend, SUPERVISOR, CaseQuery.parse(assigned_to=ann))) == [cases[2].id]
    window = CaseQuery.parse(opened_from=T0 + timedelta(days=1), opened_to=T0 + timedelta(days=3), sort="opened_at")
    assert ids(await search(backend, SUPERVISOR, window)) == [cases[1].id, cases[2].id, cases[3].id]
    both = CaseQuery.parse(family_name="de la cruz", status="open", assigned_to=ann)
    assert ids(await search(backend, worker, both)) == [cases[2].id]
    raw = " ".join(str(row) for row in await raw_rows(backend, "cases"))
    for name in ("DE  la Cruz", "de la cruz", "Straße", "Doe'"):  # long enough not to turn up in base64 by chance
        assert name not in raw


@pytest.mark.parametrize("sort", ["opened_at", "-opened_at", "updated_at", "-updated_at"])
async def test_pages_never_skip_or_repeat_while_cases_are_added(backend: Backend, sort: str) -> None:
    owner = uuid.uuid4()
    first = [a_case(owner, n) for n in range(0, 20, 2)]
    await add(backend, *first)
    query = CaseQuery.parse(sort=sort)
    seen: list[uuid.UUID] = []
    keyset = Keyset(limit=3)
    uow = backend.uow()
    extra = iter(a_case(owner, n) for n in range(1, 20, 2))
    while True:
        async with uow:
            page = await uow.cases.search(SUPERVISOR, query, keyset)
        seen.extend(case.id for case in page.items)
        await add(backend, next(extra, a_case(owner, 99)))  # lands before or after the cursor, never on it
        if page.next_after is None:
            break
        keyset = Keyset(limit=3, after=page.next_after)
    assert len(seen) == len(set(seen))
    assert {case.id for case in first} <= set(seen)
    everything = await search(backend, SUPERVISOR, query)
    assert [case.id for case in everything if case.id in seen] == seen  # in the one order


async def test_family_names_are_found_across_a_key_rotation_and_reindexed(backend: Backend) -> None:
    old_key, new_key = (base64.b64encode(os.urandom(32)).decode() for _ in range(2))
    old, both = (
        FieldEncryptor.from_setting(f"old:{old_key}"),
        FieldEncryptor.from_setting(f"new:{new_key},old:{old_key}"),
    )
    case = a_case(uuid.uuid4(), 0, "Okafor")
    uow = uow_with(backend, old)
    async with uow:
        await uow.cases.add(case)
        await uow.commit()
    rotated = uow_with(backend, both)
    query = CaseQuery.parse(family_name="okafor")
    async with rotated:
        assert await rotated.cases.count_stale_family_name_indexes() == 1
        assert [c.id for c in (await rotated.cases.search(SUPERVISOR, query, Keyset())).items] == [case.id]
        assert await rotated.cases.reindex_family_names(None, 10) == (1, case.id)
        await rotated.commit()
    async with rotated:
        assert await rotated.cases.count_stale_family_name_indexes() == 0
        assert await rotated.cases.reindex_family_names(None, 10) == (0, None)
    raw = {row["id"]: row for row in await raw_rows(backend, "cases")}[case.id]
    assert raw["family_name_index"].startswith("bi1:new:")
