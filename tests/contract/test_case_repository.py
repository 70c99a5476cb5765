"""Contract of CaseRepository on every adapter."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from craig.domain.access import Principal, Role
from craig.domain.cases import Case, new_case
from craig.domain.pages import PageRequest
from tests.support.backends import Backend

pytestmark = pytest.mark.contract

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def principal(role: Role = Role.CASEWORKER) -> Principal:
    return Principal(uuid.uuid4(), "someone", role)


def case_by(owner: Principal, n: int = 0) -> Case:
    return new_case(
        id=uuid.uuid4(),
        title=f"case {n}",
        family_name="Doe",
        opened_at=T0,
        created_by=owner.sub,
        now=T0 + timedelta(minutes=n),
    )


async def test_add_get_roundtrip(backend: Backend) -> None:
    owner = principal()
    case = case_by(owner)
    uow = backend.uow()
    async with uow:
        await uow.cases.add(case)
        await uow.commit()
    async with uow:
        assert await uow.cases.get(case.id) == case
        assert await uow.cases.get(uuid.uuid4()) is None


async def test_visibility_and_assignment(backend: Backend) -> None:
    ann, bob, sup = principal(), principal(), principal(Role.SUPERVISOR)
    cases = [case_by(ann, n) for n in range(3)] + [case_by(bob, 10)]
    uow = backend.uow()
    async with uow:
        for case in cases:
            await uow.cases.add(case)
        assert await uow.cases.assign(cases[3].id, ann.sub, sup.sub, T0)
        assert not await uow.cases.assign(cases[3].id, ann.sub, sup.sub, T0)
        await uow.commit()
    async with uow:
        page = await uow.cases.list_visible(ann, PageRequest(page=1, per_page=2))
        assert page.total == 4 and [c.id for c in page.items] == [cases[3].id, cases[2].id]
        assert (await uow.cases.list_visible(ann, PageRequest(page=2, per_page=2))).total == 4
        assert (await uow.cases.list_visible(bob, PageRequest())).total == 1
        assert (await uow.cases.list_visible(sup, PageRequest())).total == 4
        fetched = await uow.cases.get(cases[3].id)
        assert fetched is not None and fetched.assigned_workers == frozenset({ann.sub})
