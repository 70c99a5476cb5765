"""A home or placement that is not there answers a 404 problem naming it, never a 500, on
memory and on real PostgreSQL.

The public routes check every row before they use it, so the repositories' and the decision's
own "not there" paths are driven here through test-only routes of the real app (the real
adapters, the real error handling). A home removed behind Craig's back (an operator, a restore)
goes through the public routes."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import attrs
import httpx
import pytest
from litestar import post, put
from litestar.params import FromPath

from craig.domain.access import Role
from craig.domain.cases import new_case
from craig.domain.placement_changes import PlacementPatch, decide_change
from craig.domain.placements import Placement, PlacementStatus
from craig.entrypoints.container import Container
from craig.entrypoints.http.dependencies import UoW
from tests.support.apps import auth, serving
from tests.support.problems import problem_code
from tests.support.services import admin_sql

pytestmark = pytest.mark.integration


@post("/test-only/foster-homes/{home_id:uuid}/occupy", status_code=200)
async def occupy_home(home_id: FromPath[UUID], uow: UoW) -> None:
    async with uow:
        await uow.foster_homes.adjust_occupancy(home_id, 1)
        await uow.commit()


@put("/test-only/placements/{placement_id:uuid}", status_code=200)
async def store_placement(placement_id: FromPath[UUID], uow: UoW) -> None:
    now = datetime.now(UTC)
    ghost = Placement(
        id=placement_id,
        case_id=uuid.uuid4(),
        foster_home_id=None,
        status=PlacementStatus.CANCELLED,
        start_date=date(2026, 1, 5),
        created_by=uuid.uuid4(),
        created_at=now,
        updated_at=now,
    )
    async with uow:
        await uow.placements.update(ghost)
        await uow.commit()


@post("/test-only/placements/{placement_id:uuid}/end-without-locking", status_code=200)
async def end_without_locking(placement_id: FromPath[UUID], uow: UoW) -> None:
    async with uow:
        current = await uow.placements.get(placement_id)
        assert current is not None
    patch = PlacementPatch.parse(status="ended", end_reason="moved", foster_home_id=None)
    decide_change(current, patch, {}, datetime.now(UTC))


@attrs.define
class Api:
    kind: str
    container: Container
    client: httpx.AsyncClient
    pg_url: str | None

    @property
    def worker(self) -> dict[str, str]:
        return auth(self.container, sub=SUB)

    async def home(self) -> str:
        body = {"name": "Oak", "capacity": 2}
        created = await self.client.post(
            "/v1/foster-homes", json=body, headers=auth(self.container, role=Role.SUPERVISOR)
        )
        assert created.status_code == 201, created.text
        return str(created.json()["id"])

    async def case(self) -> str:
        now = datetime.now(UTC)
        case = new_case(id=uuid.uuid4(), title="t", family_name=None, opened_at=now, created_by=SUB, now=now)
        uow = self.container.uow()
        async with uow:
            await uow.cases.add(case)
            await uow.commit()
        return str(case.id)

    async def active_placement(self, home_id: str) -> str:
        body = {"case_id": await self.case(), "foster_home_id": home_id, "status": "active", "start_date": "2026-01-05"}
        created = await self.client.post("/v1/placements", json=body, headers=self.worker)
        assert created.status_code == 201, created.text
        return str(created.json()["id"])

    def remove_home_behind_craigs_back(self, home_id: str) -> None:
        if self.pg_url is None:
            self.container.memory_database().raw("foster_homes").pop(UUID(home_id))
        else:  # as a restore without foreign-key checks would
            admin_sql(
                self.pg_url,
                f"SET session_replication_role = replica; DELETE FROM foster_homes WHERE id = '{home_id}'",
            )


SUB = uuid.uuid4()
ROUTES = [occupy_home, store_placement, end_without_locking]


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with serving(request.param, tmp_path, pg_url, extra_v1_routes=ROUTES) as (container, client):
        yield Api(request.param, container, client, pg_url)


def assert_not_found(response: httpx.Response, kind: str, ident: str) -> None:
    assert response.status_code == 404, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert problem_code(body) == "not-found"
    assert body["detail"] == f"{kind} {ident} was not found"
    assert body[f"{kind.replace(' ', '_')}_id"] == ident


async def test_occupying_an_unknown_home_is_404(api: Api) -> None:
    home_id = str(uuid.uuid4())
    response = await api.client.post(f"/v1/test-only/foster-homes/{home_id}/occupy", headers=api.worker)
    assert_not_found(response, "foster home", home_id)


async def test_storing_an_unknown_placement_is_404(api: Api) -> None:
    placement_id = str(uuid.uuid4())
    response = await api.client.put(f"/v1/test-only/placements/{placement_id}", headers=api.worker)
    assert_not_found(response, "placement", placement_id)


async def test_a_decision_without_the_home_it_needs_is_404(api: Api) -> None:
    home_id = await api.home()
    placement_id = await api.active_placement(home_id)
    response = await api.client.post(f"/v1/test-only/placements/{placement_id}/end-without-locking", headers=api.worker)
    assert_not_found(response, "foster home", home_id)


async def test_unknown_homes_in_requests_are_404_naming_the_home(api: Api) -> None:
    unknown = str(uuid.uuid4())
    placement_id = await api.active_placement(await api.home())
    body = {"case_id": await api.case(), "foster_home_id": unknown, "status": "planned", "start_date": "2026-01-05"}
    for response in (
        await api.client.get(f"/v1/foster-homes/{unknown}", headers=api.worker),
        await api.client.post("/v1/placements", json=body, headers=api.worker),
        await api.client.patch(f"/v1/placements/{placement_id}", json={"foster_home_id": unknown}, headers=api.worker),
    ):
        assert_not_found(response, "foster home", unknown)


async def test_ending_a_placement_whose_home_was_removed_behind_craigs_back_is_404(api: Api) -> None:
    home_id = await api.home()
    placement_id = await api.active_placement(home_id)
    api.remove_home_behind_craigs_back(home_id)

    ended = await api.client.patch(
        f"/v1/placements/{placement_id}", json={"status": "ended", "end_reason": "moved"}, headers=api.worker
    )

    assert_not_found(ended, "foster home", home_id)
    still = await api.client.get(f"/v1/placements/{placement_id}", headers=api.worker)
    assert still.status_code == 200 and still.json()["status"] == "active"  # nothing was written
