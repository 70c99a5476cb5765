"""Foster homes and placements over real HTTP: routes, problems, and races on real PostgreSQL."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from craig.domain.access import Role
from craig.domain.cases import new_case
from craig.entrypoints.container import Container
from tests.support.apps import auth, serving
from tests.support.problems import problem_code

pytestmark = pytest.mark.integration

PROBLEM = "application/problem+json"


@attrs.define
class Api:
    container: Container
    client: httpx.AsyncClient
    worker: dict[str, str]
    supervisor: dict[str, str]
    worker_sub: uuid.UUID

    async def case(self) -> str:
        now = datetime.now(UTC)
        case = new_case(
            id=uuid.uuid4(), title="t", family_name=None, opened_at=now, created_by=self.worker_sub, now=now
        )
        uow = self.container.uow()
        async with uow:
            await uow.cases.add(case)
            await uow.commit()
        return str(case.id)

    async def home(self, capacity: int) -> dict[str, Any]:
        response = await self.client.post(
            "/v1/foster-homes", json={"name": "Home", "capacity": capacity}, headers=self.supervisor
        )
        assert response.status_code == 201, response.text
        return response.json()  # type: ignore[no-any-return]

    async def place(self, home_id: str | None, status: str = "planned", case_id: str | None = None) -> httpx.Response:
        body = {"case_id": case_id or await self.case(), "status": status, "start_date": "2026-01-05"}
        if home_id:
            body["foster_home_id"] = home_id
        return await self.client.post("/v1/placements", json=body, headers=self.worker)

    async def patch(self, placement_id: str, body: dict[str, Any], key: str | None = None) -> httpx.Response:
        headers = {**self.worker, **({"Idempotency-Key": key} if key else {})}
        return await self.client.patch(f"/v1/placements/{placement_id}", json=body, headers=headers)

    async def occupancy(self, home_id: str) -> int:
        response = await self.client.get(f"/v1/foster-homes/{home_id}", headers=self.worker)
        return int(response.json()["occupancy"])

    async def events(self, kind: str) -> Counter[str]:
        """Committed, unpublished events of one type, counted per aggregate."""
        async with self.container.outbox_relay_store().claim_batch(10_000) as batch:
            return Counter(r.envelope.aggregate_id for r in batch.events if r.envelope.type == kind)


async def _api(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    pg_url = request.getfixturevalue("pg_url") if kind == "postgres" else None
    async with serving(kind, tmp_path, pg_url) as (container, client):
        sub = uuid.uuid4()
        yield Api(container, client, auth(container, sub=sub), auth(container, role=Role.SUPERVISOR), sub)


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    async for value in _api(request.param, request, tmp_path):
        yield value


@pytest.fixture
async def pg_api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    async for value in _api("postgres", request, tmp_path):
        yield value


def problem_type(response: httpx.Response) -> str:
    assert response.headers["content-type"] == PROBLEM, response.text
    return problem_code(response.json())


async def test_foster_home_routes(api: Api) -> None:
    denied = await api.client.post("/v1/foster-homes", json={"name": "H", "capacity": 1}, headers=api.worker)
    assert denied.status_code == 403 and problem_type(denied) == "forbidden"
    created = await api.client.post(
        "/v1/foster-homes", json={"name": " Oak House ", "capacity": 2}, headers=api.supervisor
    )
    assert created.status_code == 201
    home = created.json()
    assert home["name"] == "Oak House" and (home["capacity"], home["occupancy"]) == (2, 0)
    assert created.headers["location"] == f"/v1/foster-homes/{home['id']}"
    fetched = await api.client.get(created.headers["location"], headers=api.worker)
    assert fetched.json() == home
    missing = await api.client.get(f"/v1/foster-homes/{uuid.uuid4()}", headers=api.worker)
    assert missing.status_code == 404 and problem_type(missing) == "not-found"
    for _ in range(2):
        await api.home(1)
    page = await api.client.get("/v1/foster-homes?page=2&per_page=2", headers=api.worker)
    assert page.status_code == 200
    assert {k: v for k, v in page.json().items() if k != "items"} == {"page": 2, "per_page": 2, "total": 3}
    assert len(page.json()["items"]) == 1


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"name": "H", "capacity": 0}, 422),
        ({"name": "", "capacity": 1}, 422),
        ({"name": "H", "capacity": "two"}, 400),
        ({"capacity": 1}, 400),
        ({"name": "H", "capacity": 1, "colour": "red"}, 400),
    ],
)
async def test_bad_foster_homes_are_4xx_problems(pg_api: Api, body: dict[str, Any], status: int) -> None:
    response = await pg_api.client.post("/v1/foster-homes", json=body, headers=pg_api.supervisor)
    assert response.status_code == status and response.headers["content-type"] == PROBLEM


async def test_bad_pages_are_422(pg_api: Api) -> None:
    response = await pg_api.client.get("/v1/foster-homes?per_page=0", headers=pg_api.worker)
    assert response.status_code == 422 and response.headers["content-type"] == PROBLEM


async def test_a_placement_lives_planned_active_ended(api: Api) -> None:
    home = await api.home(2)
    created = await api.place(home["id"])
    assert created.status_code == 201, created.text
    placement = created.json()
    assert placement["status"] == "planned" and placement["end_reason"] is None
    assert (await api.client.get(created.headers["location"], headers=api.worker)).json() == placement
    active = await api.patch(placement["id"], {"status": "active"})
    assert active.status_code == 200 and active.json()["status"] == "active"
    assert await api.occupancy(home["id"]) == 1
    for body in ({"status": "ended"}, {"status": "ended", "end_reason": "bored"}):
        refused = await api.patch(placement["id"], body)
        assert refused.status_code == 422 and problem_type(refused) == "invalid-input"
    ended = await api.patch(placement["id"], {"status": "ended", "end_reason": "reunified"})
    assert ended.status_code == 200
    assert (ended.json()["status"], ended.json()["end_reason"]) == ("ended", "reunified")
    assert await api.occupancy(home["id"]) == 0
    again = await api.patch(placement["id"], {"status": "active"})
    assert again.status_code == 409 and problem_type(again) == "invalid-placement-transition"
    assert (again.json()["from"], again.json()["to"]) == ("ended", "active")
    missing = await api.patch(str(uuid.uuid4()), {"status": "cancelled"})
    assert missing.status_code == 404


async def test_placements_of_cases_you_cannot_see_are_404(pg_api: Api) -> None:
    home = await pg_api.home(2)
    mine = (await pg_api.place(home["id"])).json()
    other = auth(pg_api.container, sub=uuid.uuid4())
    body = {"case_id": mine["case_id"], "status": "planned", "start_date": "2026-01-05"}
    for response in (
        await pg_api.client.post("/v1/placements", json=body, headers=other),
        await pg_api.client.get(f"/v1/placements/{mine['id']}", headers=other),
        await pg_api.client.patch(f"/v1/placements/{mine['id']}", json={"status": "cancelled"}, headers=other),
    ):
        assert response.status_code == 404 and problem_type(response) == "not-found"


async def test_a_home_s_placements_never_name_or_count_those_of_cases_hidden_from_you(api: Api) -> None:
    """The home's list read every placement and dropped the hidden ones afterwards: its cursor
    (signed, not encrypted) named the last one read, hidden or not, and pages of one counted
    them. Now the read chooses the visible ones: another case worker walks none of them."""
    home = await api.home(5)
    mine = [(await api.place(home["id"])).json()["id"] for _ in range(3)]
    assigned_case = await api.case()
    other_sub = uuid.uuid4()
    uow = api.container.uow()
    async with uow:  # the other worker is assigned one case: its placement is theirs to see
        assert await uow.cases.assign(uuid.UUID(assigned_case), other_sub, api.worker_sub, datetime.now(UTC))
        await uow.commit()
    theirs = (await api.place(home["id"], case_id=assigned_case)).json()["id"]
    other = auth(api.container, sub=other_sub)

    async def walk(headers: dict[str, str], **params: str) -> tuple[list[str], list[str]]:
        seen, cursors, cursor = [], [], None
        while True:
            query = {"limit": "1", **params, **({"cursor": cursor} if cursor else {})}
            page = await api.client.get(f"/v1/foster-homes/{home['id']}/placements", params=query, headers=headers)
            assert page.status_code == 200, page.text
            seen += [item["id"] for item in page.json()["items"]]
            cursor = page.json()["next_cursor"]
            if cursor is None:
                return seen, cursors
            cursors.append(cursor)

    seen, cursors = await walk(other)
    assert seen == [theirs]
    assert not any(hidden in base64_of(c) for c in cursors for hidden in mine)
    assert await walk(other, status="planned") == ([theirs], [])
    everything, _ = await walk(api.supervisor)
    assert sorted(everything) == sorted([*mine, theirs])


def base64_of(cursor: str) -> str:
    """A cursor's readable part, decoded (it is signed, not encrypted)."""
    payload = cursor.split(".")[0]
    return base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()


async def test_conflicts_name_their_reason(pg_api: Api) -> None:
    home = await pg_api.home(1)
    case_id = await pg_api.case()
    assert (await pg_api.place(home["id"], "active", case_id)).status_code == 201
    twice = await pg_api.place((await pg_api.home(1))["id"], "active", case_id)
    assert twice.status_code == 409 and problem_type(twice) == "case-already-placed"
    full = await pg_api.place(home["id"], "active")
    assert full.status_code == 409 and problem_type(full) == "foster-home-at-capacity"
    assert full.json()["capacity"] == 1
    unknown_home = await pg_api.place(str(uuid.uuid4()), "active")
    assert unknown_home.status_code == 404


async def test_moving_an_active_placement_moves_its_place(pg_api: Api) -> None:
    old, new = await pg_api.home(1), await pg_api.home(1)
    placement = (await pg_api.place(old["id"], "active")).json()
    moved = await pg_api.patch(placement["id"], {"foster_home_id": new["id"]})
    assert moved.status_code == 200 and moved.json()["foster_home_id"] == new["id"]
    assert (await pg_api.occupancy(old["id"]), await pg_api.occupancy(new["id"])) == (0, 1)
    back_into_full = (await pg_api.place(old["id"], "active")).json()
    refused = await pg_api.patch(back_into_full["id"], {"foster_home_id": new["id"]})
    assert refused.status_code == 409 and problem_type(refused) == "foster-home-at-capacity"


async def test_a_retried_patch_is_replayed_not_reapplied(pg_api: Api) -> None:
    home = await pg_api.home(1)
    placement = (await pg_api.place(home["id"], "active")).json()
    body = {"status": "ended", "end_reason": "moved"}
    first = await pg_api.patch(placement["id"], body, key="end-once")
    retry = await pg_api.patch(placement["id"], body, key="end-once")
    assert first.status_code == retry.status_code == 200
    assert retry.content == first.content and retry.headers["idempotent-replayed"] == "true"
    assert (await pg_api.events("placements.placement_ended"))[placement["id"]] == 1


@pytest.mark.parametrize("keyed", [True, False], ids=["idempotency-key", "no-key"])
async def test_fifty_concurrent_ends_of_one_placement_end_it_once(pg_api: Api, keyed: bool) -> None:
    home = await pg_api.home(3)
    placements = [(await pg_api.place(home["id"], "active")).json() for _ in range(3)]
    target = placements[0]["id"]
    body = {"status": "ended", "end_reason": "disrupted"}
    responses = await asyncio.gather(
        *(pg_api.patch(target, body, key=uuid.uuid4().hex if keyed else None) for _ in range(50))
    )
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {200: 1, 409: 49}, [r.text for r in responses if r.status_code not in (200, 409)]
    assert {problem_type(r) for r in responses if r.status_code == 409} == {"invalid-placement-transition"}
    assert await pg_api.occupancy(home["id"]) == 2
    ended = await pg_api.events("placements.placement_ended")
    assert ended == {target: 1}


async def test_fifty_concurrent_activations_fill_a_home_of_three_exactly(pg_api: Api) -> None:
    home = await pg_api.home(3)
    planned = [(await pg_api.place(home["id"])).json()["id"] for _ in range(50)]
    responses = await asyncio.gather(
        *(pg_api.patch(pid, {"status": "active"}, key=uuid.uuid4().hex) for pid in planned)
    )
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {200: 3, 409: 47}, [r.text for r in responses if r.status_code not in (200, 409)]
    assert {problem_type(r) for r in responses if r.status_code == 409} == {"foster-home-at-capacity"}
    assert await pg_api.occupancy(home["id"]) == 3
    assert sum((await pg_api.events("placements.placement_activated")).values()) == 3


async def test_fifty_concurrent_active_creations_fill_a_home_of_three_exactly(pg_api: Api) -> None:
    home = await pg_api.home(3)
    cases = [await pg_api.case() for _ in range(50)]
    responses = await asyncio.gather(*(pg_api.place(home["id"], "active", case_id) for case_id in cases))
    assert Counter(r.status_code for r in responses) == {201: 3, 409: 47}
    assert {problem_type(r) for r in responses if r.status_code == 409} == {"foster-home-at-capacity"}
    assert await pg_api.occupancy(home["id"]) == 3
    uow = pg_api.container.uow()
    async with uow:
        assert await uow.placements.count_active_in(uuid.UUID(home["id"])) == 3
        stats = await uow.foster_homes.stats(sample=1)
    assert stats.drifted == []
