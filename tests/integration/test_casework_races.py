"""The casework races on real PostgreSQL over HTTP: whatever the interleaving, one winner and a
clear answer for every loser, and the database never holds what the rules forbid."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from tests.support.apps import serving
from tests.support.casework_api import CaseworkApi, problem_type

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

ROUNDS = 6


@pytest.fixture
async def api(pg_url: str, tmp_path: Path) -> AsyncIterator[CaseworkApi]:
    async with serving("postgres", tmp_path, pg_url) as (container, client):
        yield CaseworkApi.of(container, client)


def outcomes(responses: list[httpx.Response]) -> Counter[tuple[int, str]]:
    return Counter((r.status_code, problem_type(r) if r.status_code >= 400 else "ok") for r in responses)


async def warm_up(api: CaseworkApi, connections: int) -> None:
    """Open that many keep-alive connections first, so the racing requests leave together
    instead of one after another as each new connection is set up."""
    await asyncio.gather(*(api.client.get("/health/live") for _ in range(connections)))


async def scalar(api: CaseworkApi, sql: str, **params: object) -> object:
    async with api.container.postgres().transaction() as conn:
        return (await conn.execute(text(sql), params)).scalar_one()


async def test_twenty_concurrent_screenings_open_exactly_one_case(api: CaseworkApi) -> None:
    referral = await api.referral()
    etag = await api.etag(f"/v1/referrals/{referral}", api.screener)
    body = {"decision": "screen_in", "case": {"title": "Tom", "family_name": "Okafor"}}
    screeners = [api.screener, api.supervisor] * 10
    await warm_up(api, len(screeners))
    responses = await asyncio.gather(
        *(
            api.client.post(f"/v1/referrals/{referral}/screening", json=body, headers={**who.headers, "If-Match": etag})
            for who in screeners
        )
    )
    assert outcomes(list(responses)) == {(201, "ok"): 1, (409, "referral-already-screened"): 19}
    winner = next(r for r in responses if r.status_code == 201).json()
    for loser in (r for r in responses if r.status_code == 409):
        assert loser.json()["screened_by"] == winner["screened_by"] and loser.json()["case_id"] == winner["case_id"]
    assert await scalar(api, "SELECT count(*) FROM cases WHERE referral_id = :r", r=referral) == 1
    assert len(await api.events("intake.referral_screened_in")) == 1
    assert len(await api.events("cases.case_opened")) == 1


async def test_fifty_concurrent_patches_from_one_read_let_exactly_one_win(api: CaseworkApi) -> None:
    case = await api.case()
    path = f"/v1/cases/{case['id']}"
    etag = await api.etag(path, api.worker)
    await warm_up(api, 50)
    responses = await asyncio.gather(
        *(
            api.client.patch(path, json={"title": f"title {n}"}, headers={**api.worker.headers, "If-Match": etag})
            for n in range(50)
        )
    )
    assert outcomes(list(responses)) == {(200, "ok"): 1, (412, "precondition-failed"): 49}
    winner = next(r for r in responses if r.status_code == 200)
    assert all(r.headers["etag"] == winner.headers["etag"] for r in responses)
    stored = (await api.client.get(path, headers=api.worker.headers)).json()
    assert stored["title"] == winner.json()["title"] and stored["version"] == 2
    assert len(await api.events("cases.case_updated")) == 1


async def test_closing_a_case_while_a_placement_starts(api: CaseworkApi) -> None:
    home = await api.home(capacity=ROUNDS)
    await warm_up(api, 2)
    seen: Counter[str] = Counter()
    for _ in range(ROUNDS):
        case = await api.case()
        path = f"/v1/cases/{case['id']}"
        close = api.client.post(
            f"{path}/closure", json={"reason": "done"}, headers={**api.worker.headers, "If-Match": "*"}
        )
        closing, placing = await asyncio.gather(close, api.place(case["id"], home["id"]))
        pair = (closing.status_code, placing.status_code)
        if pair == (200, 409):
            assert problem_type(placing) == "case-closed"
            seen["closed first"] += 1
        else:
            assert pair == (409, 201), (closing.text, placing.text)
            assert problem_type(closing) == "case-has-active-placement"
            seen["placed first"] += 1
    # Never a closed case with an active placement, whichever came first.
    assert (
        await scalar(
            api,
            "SELECT count(*) FROM cases c JOIN placements p ON p.case_id = c.id "
            "WHERE c.status = 'closed' AND p.status = 'active'",
        )
        == 0
    )
    assert sum(seen.values()) == ROUNDS


async def test_a_capacity_change_racing_an_activation(api: CaseworkApi) -> None:
    await warm_up(api, 2)
    for _ in range(ROUNDS):
        home = await api.home(capacity=2)
        path = f"/v1/foster-homes/{home['id']}"
        assert (await api.place((await api.case())["id"], home["id"])).status_code == 201
        planned = await api.place((await api.case())["id"], home["id"], "planned")
        shrink = api.client.patch(path, json={"capacity": 1}, headers={**api.supervisor.headers, "If-Match": "*"})
        activate = api.client.patch(
            f"/v1/placements/{planned.json()['id']}", json={"status": "active"}, headers=api.worker.headers
        )
        shrunk, activated = await asyncio.gather(shrink, activate)
        pair = (shrunk.status_code, activated.status_code)
        if pair == (200, 409):
            assert problem_type(activated) == "foster-home-at-capacity"
        else:
            assert pair == (409, 200), (shrunk.text, activated.text)
            assert problem_type(shrunk) == "capacity-below-occupancy"
        stored = (await api.client.get(path, headers=api.worker.headers)).json()
        active = await scalar(
            api, "SELECT count(*) FROM placements WHERE foster_home_id = :h AND status = 'active'", h=home["id"]
        )
        assert stored["occupancy"] == active <= stored["capacity"]
