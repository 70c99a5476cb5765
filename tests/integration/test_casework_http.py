"""The intake queue, the case lifecycle and foster-home changes over real HTTP, on the memory
adapters and on real PostgreSQL: routes, roles, ETags, preconditions and problems."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from craig.domain.access import Role
from tests.support.apps import serving
from tests.support.casework_api import CaseworkApi, problem_type

pytestmark = pytest.mark.integration


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[CaseworkApi]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with serving(request.param, tmp_path, pg_url) as (container, client):
        yield CaseworkApi.of(container, client)


async def test_a_caseworker_gets_403_on_every_referral_route(api: CaseworkApi) -> None:
    referral = await api.referral()
    worker = api.worker.headers
    for response in (
        await api.client.get("/v1/referrals", headers=worker),
        await api.client.get(f"/v1/referrals/{referral}", headers=worker),
        await api.client.post(
            f"/v1/referrals/{referral}/screening",
            json={"decision": "screen_out", "reason": "no"},
            headers={**worker, "If-Match": "*"},
        ),
    ):
        assert response.status_code == 403 and problem_type(response) == "forbidden"


async def test_the_queue_is_most_urgent_first_with_deadlines(api: CaseworkApi) -> None:
    low = await api.referral("Tom is often late to school", age=12)
    urgent = await api.referral("There is a knife and he is threatening to kill", age=9)
    high = await api.referral("Bruises on her arms", age=8)
    response = await api.client.get("/v1/referrals", headers=api.screener.headers)
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert [i["id"] for i in items] == [urgent, high, low]
    assert [i["priority"] for i in items] == ["urgent", "high", "low"]
    first = items[0]
    assert first["child"] == {"first_name": "Tom", "age": 9} and first["reporter"]["name"] == "Rita"
    assert first["status"] == "new" and first["overdue"] is False and "case_id" not in first
    assert first["respond_by"] > first["received_at"]
    paged = await api.client.get("/v1/referrals?limit=1", headers=api.screener.headers)
    assert [i["id"] for i in paged.json()["items"]] == [urgent]
    assert paged.headers["link"].endswith('>; rel="next"') and paged.json()["next_cursor"]
    rest = await api.client.get(paged.headers["link"][1:].split(">")[0], headers=api.screener.headers)
    assert [i["id"] for i in rest.json()["items"]] == [high]
    only_low = await api.client.get("/v1/referrals?priority=low", headers=api.screener.headers)
    assert [i["id"] for i in only_low.json()["items"]] == [low]
    assert (await api.client.get("/v1/referrals?overdue=true", headers=api.screener.headers)).json()["items"] == []
    for bad in ("status=old", "priority=critical", "overdue=maybe", "limit=0", "limit=201", "cursor=abc"):
        answer = await api.client.get(f"/v1/referrals?{bad}", headers=api.screener.headers)
        assert answer.status_code in (400, 422), (bad, answer.text)


async def test_screening_in_opens_a_linked_case(api: CaseworkApi) -> None:
    referral = await api.referral()
    path = f"/v1/referrals/{referral}"
    etag = await api.etag(path, api.screener)
    body = {
        "decision": "screen_in",
        "case": {"title": "Tom", "family_name": "Okafor"},
        "assign_to": str(api.worker.sub),
    }
    missing = await api.client.post(f"{path}/screening", json=body, headers=api.screener.headers)
    assert missing.status_code == 428 and problem_type(missing) == "precondition-required"
    keyed = {**api.screener.headers, "Idempotency-Key": f"screen-{referral}"}
    stale = await api.client.post(f"{path}/screening", json=body, headers={**keyed, "If-Match": '"v9"'})
    assert stale.status_code == 412 and problem_type(stale) == "precondition-failed"
    assert stale.headers["etag"] == etag == stale.json()["current_etag"]
    # A precondition failure is not stored: the same key with the fresh ETag runs.
    done = await api.client.post(f"{path}/screening", json=body, headers={**keyed, "If-Match": etag})
    assert done.status_code == 201, done.text
    assert "idempotent-replayed" not in done.headers
    replayed = await api.client.post(f"{path}/screening", json=body, headers={**keyed, "If-Match": etag})
    assert replayed.status_code == 201 and replayed.headers["idempotent-replayed"] == "true"
    screened = done.json()
    assert screened["status"] == "screened_in" and screened["screened_by"] == str(api.screener.sub)
    assert done.headers["location"] == f"/v1/cases/{screened['case_id']}"
    case = await api.client.get(done.headers["location"], headers=api.worker.headers)
    assert case.status_code == 200 and case.json()["referral_id"] == referral
    assert case.json()["assigned_workers"] == [str(api.worker.sub)]
    hidden = await api.client.get(done.headers["location"], headers=api.screener.headers)
    assert hidden.status_code == 404  # a screener sees no case it is not assigned to
    again = await api.client.post(
        f"{path}/screening",
        json={"decision": "screen_out", "reason": "late"},
        headers={**api.supervisor.headers, "If-Match": "*"},
    )
    assert again.status_code == 409 and problem_type(again) == "referral-already-screened"
    assert again.json()["screened_by"] == str(api.screener.sub) and again.json()["screened_at"]
    found = await api.client.get(f"/v1/cases?referral_id={referral}", headers=api.supervisor.headers)
    assert [c["id"] for c in found.json()["items"]] == [screened["case_id"]]
    events = await api.events("intake.referral_screened_in")
    assert events == [
        {
            "referral_id": referral,
            "reference": screened["reference"],
            "case_id": screened["case_id"],
            "screened_by": str(api.screener.sub),
        }
    ]


async def test_a_screener_naming_itself_in_assign_to_is_refused_and_keeps_no_case(api: CaseworkApi) -> None:
    referral = await api.referral()
    path = f"/v1/referrals/{referral}"
    headers = {**api.screener.headers, "If-Match": await api.etag(path, api.screener)}
    body = {"decision": "screen_in", "case": {"title": "Tom"}, "assign_to": str(api.screener.sub)}
    refused = await api.client.post(f"{path}/screening", json=body, headers=headers)
    assert refused.status_code == 403 and problem_type(refused) == "forbidden", refused.text
    assert "does not keep the cases it opens" in refused.json()["detail"]
    assert (await api.client.get(path, headers=api.screener.headers)).json()["status"] == "new"
    mine = await api.client.get("/v1/cases?assigned_to=me", headers=api.screener.headers)
    assert mine.status_code == 200 and mine.json()["items"] == []
    # Another worker may be named, as the screening route always allowed.
    done = await api.client.post(f"{path}/screening", json={**body, "assign_to": str(api.worker.sub)}, headers=headers)
    assert done.status_code == 201, done.text


async def test_screening_out_closes_the_referral_with_its_reason(api: CaseworkApi) -> None:
    referral = await api.referral()
    path = f"/v1/referrals/{referral}/screening"
    headers = {**api.supervisor.headers, "If-Match": await api.etag(f"/v1/referrals/{referral}")}
    for bad in (
        {"decision": "screen_out"},
        {"decision": "screen_out", "reason": "x" * 2001},
        {"decision": "maybe"},
        {"decision": "screen_in"},
    ):
        response = await api.client.post(path, json=bad, headers=headers)
        assert response.status_code == 422, (bad, response.text)
    done = await api.client.post(
        path, json={"decision": "screen_out", "reason": "a neighbour dispute"}, headers=headers
    )
    assert done.status_code == 200, done.text
    assert done.json()["decision_reason"] == "a neighbour dispute" and "case_id" not in done.json()
    queue = await api.client.get("/v1/referrals?status=screened_out", headers=api.screener.headers)
    assert [r["id"] for r in queue.json()["items"]] == [referral]
    assert len(await api.events("intake.referral_screened_out")) == 1


async def test_a_case_lives_open_changed_closed_reopened(api: CaseworkApi) -> None:
    case = await api.case()
    path = f"/v1/cases/{case['id']}"
    got = await api.client.get(path, headers=api.worker.headers)
    etag = got.headers["etag"]
    assert got.json()["status"] == "open" and got.json()["version"] == 1
    not_modified = await api.client.get(path, headers={**api.worker.headers, "If-None-Match": etag})
    assert not_modified.status_code == 304 and not_modified.headers["etag"] == etag and not not_modified.content
    change = {"title": "Doe-Roe family", "family_name": None}
    missing = await api.client.patch(path, json=change, headers=api.worker.headers)
    assert missing.status_code == 428 and problem_type(missing) == "precondition-required"
    changed = await api.client.patch(path, json=change, headers={**api.worker.headers, "If-Match": etag})
    assert changed.status_code == 200 and changed.json()["family_name"] is None
    assert changed.headers["etag"] != etag
    stale = await api.client.patch(path, json={"title": "x"}, headers={**api.worker.headers, "If-Match": etag})
    assert stale.status_code == 412 and stale.headers["etag"] == changed.headers["etag"]
    assert await api.events("cases.case_updated") == [
        {"case_id": case["id"], "fields": ["family_name", "title"], "updated_by": str(api.worker.sub)}
    ]
    home = await api.home()
    placed = await api.place(case["id"], home["id"])
    assert placed.status_code == 201
    current = changed.headers["etag"]
    closure = await api.client.post(
        f"{path}/closure", json={"reason": "moved"}, headers={**api.worker.headers, "If-Match": current}
    )
    assert closure.status_code == 409 and problem_type(closure) == "case-has-active-placement"
    ended = await api.client.patch(
        f"/v1/placements/{placed.json()['id']}",
        json={"status": "ended", "end_reason": "reunified"},
        headers={**api.worker.headers, "If-Match": placed.headers["etag"]},
    )
    assert ended.status_code == 200, ended.text
    closed = await api.client.post(
        f"{path}/closure", json={"reason": "moved away"}, headers={**api.worker.headers, "If-Match": current}
    )
    assert closed.status_code == 200, closed.text
    assert closed.json()["status"] == "closed" and closed.json()["close_reason"] == "moved away"
    refused = [
        await api.client.post(
            f"{path}/contacts",
            json={"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00Z", "summary": "s"},
            headers=api.worker.headers,
        ),
        await api.place(case["id"], home["id"], "planned"),
        await api.client.post(
            f"{path}/assignments", json={"worker_sub": str(uuid.uuid4())}, headers=api.supervisor.headers
        ),
    ]
    assert [(r.status_code, problem_type(r)) for r in refused] == [(409, "case-closed")] * 3
    denied = await api.client.post(f"{path}/reopening", json={"reason": "back"}, headers=api.worker.headers)
    assert denied.status_code == 403
    reopened = await api.client.post(f"{path}/reopening", json={"reason": "back"}, headers=api.supervisor.headers)
    assert reopened.status_code == 200 and reopened.json()["status"] == "open" and reopened.json()["closed_at"] is None
    assert len(await api.events("cases.case_closed")) == len(await api.events("cases.case_reopened")) == 1


async def test_unassigning(api: CaseworkApi) -> None:
    case = await api.case()
    other = api.person(Role.CASEWORKER)
    path = f"/v1/cases/{case['id']}/assignments"
    assert (
        await api.client.post(path, json={"worker_sub": str(other.sub)}, headers=api.supervisor.headers)
    ).status_code == 201
    assert (await api.client.get(f"/v1/cases/{case['id']}", headers=other.headers)).status_code == 200
    denied = await api.client.delete(f"{path}/{other.sub}", headers=api.worker.headers)
    assert denied.status_code == 403
    key = {"Idempotency-Key": f"unassign-{uuid.uuid4()}"}
    gone = await api.client.delete(f"{path}/{other.sub}", headers={**api.supervisor.headers, **key})
    assert gone.status_code == 204
    replayed = await api.client.delete(f"{path}/{other.sub}", headers={**api.supervisor.headers, **key})
    assert replayed.status_code == 204 and replayed.headers["idempotent-replayed"] == "true"
    again = await api.client.delete(f"{path}/{other.sub}", headers=api.supervisor.headers)
    assert again.status_code == 404 and problem_type(again) == "not-found"
    assert (await api.client.get(f"/v1/cases/{case['id']}", headers=other.headers)).status_code == 404
    assert len(await api.events("cases.case_unassigned")) == 1


async def test_finding_cases(api: CaseworkApi) -> None:
    ann = api.worker
    first = await api.case(ann, "  de LA Cruz ")
    second = await api.case(ann, "Doe")
    third = await api.case(api.person(Role.CASEWORKER), "De la Cruz")

    async def ids(query: str, who: dict[str, str] = ann.headers) -> list[str]:
        response = await api.client.get(f"/v1/cases?{query}", headers=who)
        assert response.status_code == 200, response.text
        return [c["id"] for c in response.json()["items"]]

    assert await ids("family_name=de%20la%20cruz") == [first["id"]]  # visibility before filtering
    assert await ids("family_name=DE%20LA%20%20CRUZ", api.supervisor.headers) == [third["id"], first["id"]]
    assert await ids("sort=opened_at") == [first["id"], second["id"]]
    assert await ids("status=closed") == []
    assert await ids("assigned_to=me") == []
    # An empty or blank family name is refused, never read as no filter: it listed every case.
    for blank in ("family_name=", "family_name=%20%20", "family_name=%E3%80%80"):
        for who in (ann.headers, api.supervisor.headers):
            refused = await api.client.get(f"/v1/cases?{blank}", headers=who)
            assert refused.status_code == 422 and problem_type(refused) == "invalid-input", (blank, refused.text)
            assert "family_name must name a family" in refused.json()["detail"]
    for naive in ("opened_from=2020-01-01T00:00:00", "opened_to=2030-01-01T00:00:00"):
        refused = await api.client.get(f"/v1/cases?{naive}", headers=api.supervisor.headers)
        assert refused.status_code == 422 and problem_type(refused) == "invalid-input", refused.text
        assert "needs a time zone" in refused.json()["detail"]
    for bad in ("sort=title", "status=gone", "assigned_to=you", "opened_from=yesterday", "referral_id=7"):
        response = await api.client.get(f"/v1/cases?{bad}", headers=ann.headers)
        assert response.status_code in (400, 422) and response.headers["content-type"] == "application/problem+json", (
            bad
        )
    page = await api.client.get("/v1/cases?limit=1", headers=ann.headers)
    cursor = page.json()["next_cursor"]
    tampered = cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")
    for bad_cursor in (tampered, "not-a-cursor", "x" * 5000):
        response = await api.client.get(f"/v1/cases?limit=1&cursor={bad_cursor}", headers=ann.headers)
        assert response.status_code == 400 and problem_type(response) == "invalid-cursor"
    other_filters = await api.client.get(f"/v1/cases?limit=1&status=open&cursor={cursor}", headers=ann.headers)
    assert other_filters.status_code == 400 and problem_type(other_filters) == "invalid-cursor"
    follow = await api.client.get(f"/v1/cases?limit=1&cursor={cursor}", headers=ann.headers)
    assert [c["id"] for c in follow.json()["items"]] == [first["id"]] and follow.json()["next_cursor"] is None
    assert "link" not in follow.headers


async def test_a_capacity_beyond_what_postgresql_stores_is_the_same_422_on_both_profiles(api: CaseworkApi) -> None:
    too_many = 2**31  # one more than the INT column holds
    created = await api.client.post(
        "/v1/foster-homes", json={"name": "Oak", "capacity": too_many}, headers=api.supervisor.headers
    )
    assert created.status_code == 422 and "capacity must be an integer from 1 to 2147483647" in created.text
    home = await api.home(capacity=2)
    path = f"/v1/foster-homes/{home['id']}"
    changed = await api.client.patch(
        path, json={"capacity": too_many}, headers={**api.supervisor.headers, "If-Match": await api.etag(path)}
    )
    assert changed.status_code == 422 and "from 1 to 2147483647" in changed.text
    assert (await api.client.get(path, headers=api.supervisor.headers)).json()["capacity"] == 2
    largest = await api.client.post(
        "/v1/foster-homes", json={"name": "Big", "capacity": too_many - 1}, headers=api.supervisor.headers
    )
    assert largest.status_code == 201 and largest.json()["capacity"] == too_many - 1


async def test_foster_home_changes_and_placement_etags(api: CaseworkApi) -> None:
    home = await api.home(capacity=2)
    path = f"/v1/foster-homes/{home['id']}"
    case = await api.case()
    placed = await api.place(case["id"], home["id"])
    assert placed.status_code == 201 and placed.headers["etag"] == '"v1"'
    etag = await api.etag(path)
    missing = await api.client.patch(path, json={"capacity": 3}, headers=api.supervisor.headers)
    assert missing.status_code == 428
    worker = await api.client.patch(path, json={"capacity": 3}, headers={**api.worker.headers, "If-Match": etag})
    assert worker.status_code == 403
    with_match = {**api.supervisor.headers, "If-Match": etag}
    for body, code in (({"status": "closed"}, "foster-home-has-active-placements"), ({"capacity": 0}, None)):
        response = await api.client.patch(path, json=body, headers=with_match)
        assert response.status_code in (409, 422) and (code is None or problem_type(response) == code)
    changed = await api.client.patch(path, json={"name": "Oak House", "capacity": 1}, headers=with_match)
    assert changed.status_code == 200 and changed.json()["capacity"] == 1 and changed.headers["etag"] != etag
    below = await api.client.patch(path, json={"capacity": 1}, headers={**api.supervisor.headers, "If-Match": "*"})
    assert below.status_code == 200  # unchanged: equal to the occupancy is fine
    history = await api.client.get(f"{path}/placements?status=active", headers=api.worker.headers)
    assert [p["id"] for p in history.json()["items"]] == [placed.json()["id"]]
    case_history = await api.client.get(f"/v1/cases/{case['id']}/placements", headers=api.worker.headers)
    assert [p["id"] for p in case_history.json()["items"]] == [placed.json()["id"]]
    stale = await api.client.patch(
        f"/v1/placements/{placed.json()['id']}",
        json={"status": "ended", "end_reason": "moved"},
        headers={**api.worker.headers, "If-Match": '"v7"'},
    )
    assert stale.status_code == 412 and stale.headers["etag"] == '"v1"'
    empty = await api.home(capacity=1)
    empty_path = f"/v1/foster-homes/{empty['id']}"
    closed = await api.client.patch(
        empty_path,
        json={"status": "closed"},
        headers={**api.supervisor.headers, "If-Match": await api.etag(empty_path)},
    )
    assert closed.status_code == 200 and closed.json()["status"] == "closed"
    refused = await api.place((await api.case())["id"], empty["id"], "planned")
    assert refused.status_code == 409 and problem_type(refused) == "foster-home-closed"


async def test_every_new_route_documents_its_parameters_and_responses(api: CaseworkApi) -> None:
    if api.container.settings().profile.value != "memory":
        pytest.skip("the document is the same on every profile")
    doc = (await api.client.get("/api-doc/openapi.json")).json()
    expected = {
        ("/v1/referrals", "get"): ({"status", "priority", "overdue", "limit", "cursor"}, {"200", "400", "403"}),
        ("/v1/referrals/{referral_id}", "get"): ({"referral_id"}, {"200", "403", "404"}),
        ("/v1/referrals/{referral_id}/screening", "post"): (
            {"referral_id", "If-Match"},
            {"200", "201", "403", "404", "409", "412", "422", "428"},
        ),
        ("/v1/cases", "get"): (
            {
                "status",
                "assigned_to",
                "family_name",
                "opened_from",
                "opened_to",
                "referral_id",
                "sort",
                "limit",
                "cursor",
            },
            {"200", "400"},
        ),
        ("/v1/cases/{case_id}", "get"): ({"case_id", "If-None-Match"}, {"200", "304", "404"}),
        ("/v1/cases/{case_id}", "patch"): ({"case_id", "If-Match"}, {"200", "404", "412", "428"}),
        ("/v1/cases/{case_id}/closure", "post"): ({"case_id", "If-Match"}, {"200", "409", "412", "428"}),
        ("/v1/cases/{case_id}/reopening", "post"): ({"case_id", "If-Match"}, {"200", "403", "409"}),
        ("/v1/cases/{case_id}/assignments/{worker_sub}", "delete"): ({"case_id", "worker_sub"}, {"204", "403", "404"}),
        ("/v1/cases/{case_id}/placements", "get"): ({"case_id", "limit", "cursor"}, {"200", "404"}),
        ("/v1/foster-homes/{home_id}", "patch"): ({"home_id", "If-Match"}, {"200", "403", "409", "412", "428"}),
        ("/v1/foster-homes/{home_id}/placements", "get"): ({"home_id", "status", "limit", "cursor"}, {"200", "404"}),
    }
    for (path, method), (parameters, statuses) in expected.items():
        operation = doc["paths"][path][method]
        assert parameters <= {p["name"] for p in operation.get("parameters", [])}, (path, method)
        assert statuses <= set(operation["responses"]), (path, method)
        ok = operation["responses"][min(statuses)]
        if "content" in ok:
            schema = ok["content"]["application/json"]["schema"]
            assert "$ref" in schema or "oneOf" in schema, (path, method, schema)  # a typed struct, not a free dict
