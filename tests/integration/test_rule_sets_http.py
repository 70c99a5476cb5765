"""``/v1/rule-sets`` over real HTTP, on the memory adapters and on real PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from craig.domain.access import Role
from craig.entrypoints.container import Container
from tests.support.apps import auth, serving
from tests.support.problems import problem_code

pytestmark = pytest.mark.integration

RULES: list[dict[str, Any]] = [
    {
        "when": {"all": [{"fact": "age", "op": "lt", "value": 3}, {"fact": "injured", "op": "eq", "value": True}]},
        "then": "urgent",
    },
    {
        "when": {"any": [{"fact": "age", "op": "lt", "value": 6}, {"fact": "region", "op": "in", "value": ["north"]}]},
        "then": "high",
    },
]


@attrs.define
class Api:
    container: Container
    client: httpx.AsyncClient

    def headers(self, role: Role) -> dict[str, str]:
        return auth(self.container, role=role)


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with serving(request.param, tmp_path, pg_url) as (container, client):
        yield Api(container, client)


async def test_create_read_list_and_evaluate(api: Api) -> None:
    supervisor, worker = api.headers(Role.SUPERVISOR), api.headers(Role.CASEWORKER)
    created = await api.client.post("/v1/rule-sets", json={"name": "triage", "rules": RULES}, headers=supervisor)
    assert created.status_code == 201, created.text
    assert created.json()["version"] == 1 and created.json()["rules"] == RULES
    assert created.headers["location"] == "/v1/rule-sets/triage?version=1"

    evaluate = "/v1/rule-sets/triage/evaluate"
    cases = [
        ({"age": 2, "injured": True}, {"decision": "urgent", "matched_rule": 0, "version": 1}),
        ({"age": 2}, {"decision": "high", "matched_rule": 1, "version": 1}),
        ({"age": "two", "region": "north"}, {"decision": "high", "matched_rule": 1, "version": 1}),
        ({"age": 9}, {"decision": None, "matched_rule": None, "version": 1}),
        ({}, {"decision": None, "matched_rule": None, "version": 1}),
    ]
    for facts, expected in cases:
        answer = await api.client.post(evaluate, json={"facts": facts}, headers=worker)
        assert answer.status_code == 200 and answer.json() == expected, (facts, answer.text)

    second = await api.client.post(
        "/v1/rule-sets",
        json={"name": "triage", "rules": [{"when": {"all": []}, "then": "routine"}]},
        headers=supervisor,
    )
    assert second.status_code == 201 and second.json()["version"] == 2
    answer = await api.client.post(evaluate, json={"facts": {"age": 2}}, headers=worker)
    assert answer.json() == {"decision": "routine", "matched_rule": 0, "version": 2}

    latest = await api.client.get("/v1/rule-sets/triage", headers=worker)
    first = await api.client.get("/v1/rule-sets/triage", params={"version": 1}, headers=worker)
    assert latest.json()["version"] == 2 and first.json()["rules"] == RULES
    listing = await api.client.get("/v1/rule-sets", params={"per_page": 1}, headers=worker)
    assert listing.json()["total"] == 2 and listing.json()["items"][0]["name"] == "intake-triage"
    everything = await api.client.get("/v1/rule-sets", headers=worker)
    assert [(i["name"], i["version"], i["rule_count"]) for i in everything.json()["items"]] == [
        ("intake-triage", 1, 5),
        ("triage", 2, 1),
    ]


async def test_a_version_decides_alike_on_every_instance_whatever_form_its_numbers_were_sent_in(api: Api) -> None:
    """A value the store keeps in another form (JSONB: 1e23 is the integer 10**23) is answered,
    cached and compared in its stored form from the start: the instance that created the version
    decides as every other instance, and as itself once its cache entry is gone. It cached the
    form sent, and decided otherwise until the entry aged out."""
    supervisor, worker = api.headers(Role.SUPERVISOR), api.headers(Role.CASEWORKER)
    rules = [{"when": {"fact": "x", "op": "eq", "value": 1e23}, "then": "hit"}]
    created = await api.client.post("/v1/rule-sets", json={"name": "num", "rules": rules}, headers=supervisor)
    assert created.status_code == 201, created.text
    read = await api.client.get("/v1/rule-sets/num", headers=worker)
    assert created.json()["rules"] == read.json()["rules"]
    assert created.json()["rules"][0]["when"]["value"] == 10**23

    async def decisions() -> list[Any]:
        answers = []
        for fact in (1e23, 10**23):
            answer = await api.client.post("/v1/rule-sets/num/evaluate", json={"facts": {"x": fact}}, headers=worker)
            assert answer.status_code == 200, answer.text
            answers.append(answer.json()["decision"])
        return answers

    cached = await decisions()
    api.container.rule_cache().evict()  # as another instance, or this one a minute later
    assert await decisions() == cached == [None, "hit"]


async def test_refusals(api: Api) -> None:
    supervisor, worker = api.headers(Role.SUPERVISOR), api.headers(Role.CASEWORKER)
    forbidden = await api.client.post("/v1/rule-sets", json={"name": "t", "rules": RULES}, headers=worker)
    assert forbidden.status_code == 403

    bad = await api.client.post(
        "/v1/rule-sets",
        json={"name": "t", "rules": [{"when": {"fact": "a", "op": "matches", "value": ".*"}, "then": "x"}]},
        headers=supervisor,
    )
    assert bad.status_code == 422
    problem = bad.json()
    assert problem_code(problem) == "invalid-rule-set" and problem["path"] == "rules[0].when.op"
    assert "matches" in problem["detail"] and "eq, ne, lt" in problem["detail"]

    # PostgreSQL cannot store a NUL in JSON: every string of the document refuses one, on both profiles.
    for where, rule in (
        ("rules[0].then", {"when": {"fact": "a", "op": "eq", "value": 1}, "then": "x\x00"}),
        ("rules[0].when.fact", {"when": {"fact": "a\x00", "op": "eq", "value": 1}, "then": "x"}),
        ("rules[0].when.value", {"when": {"fact": "a", "op": "eq", "value": "v\x00"}, "then": "x"}),
        ("rules[0].when.value[1]", {"when": {"fact": "a", "op": "in", "value": ["v", "\x00"]}, "then": "x"}),
    ):
        nul = await api.client.post("/v1/rule-sets", json={"name": "t", "rules": [rule]}, headers=supervisor)
        assert nul.status_code == 422 and nul.json()["path"] == where, nul.text
        assert "NUL" in nul.json()["detail"]

    not_a_list = await api.client.post("/v1/rule-sets", json={"name": "t", "rules": {"x": 1}}, headers=supervisor)
    assert not_a_list.status_code == 422 and not_a_list.json()["path"] == "rules"
    bad_name = await api.client.post("/v1/rule-sets", json={"name": "Not OK", "rules": []}, headers=supervisor)
    assert bad_name.status_code == 422 and bad_name.json()["path"] == "name"
    missing = await api.client.post("/v1/rule-sets", json={"rules": []}, headers=supervisor)
    assert missing.status_code == 400

    unknown = await api.client.post("/v1/rule-sets/nope/evaluate", json={"facts": {}}, headers=worker)
    assert unknown.status_code == 404
    facts_not_object = await api.client.post(
        "/v1/rule-sets/intake-triage/evaluate", json={"facts": [1]}, headers=worker
    )
    assert facts_not_object.status_code == 400
    assert (
        await api.client.get("/v1/rule-sets/intake-triage", params={"version": 9}, headers=worker)
    ).status_code == 404
    assert (await api.client.get("/v1/rule-sets")).status_code == 401


async def test_numbers_beyond_what_is_stored_name_nothing_rather_than_fail_in_the_database(api: Api) -> None:
    supervisor = api.headers(Role.SUPERVISOR)
    assert (await api.client.post("/v1/rule-sets", json={"name": "big", "rules": RULES}, headers=supervisor)).is_success
    for version in (2**31, 2**63 - 1, 0, -1):
        answer = await api.client.get(f"/v1/rule-sets/big?version={version}", headers=supervisor)
        assert answer.status_code == 404 and problem_code(answer.json()) == "not-found", (version, answer.text)
    page = await api.client.get("/v1/rule-sets?page=9223372036854775807", headers=supervisor)
    assert page.status_code == 422 and problem_code(page.json()) == "invalid-input", page.text
    assert page.json()["errors"][0]["pointer"] == "page"


async def test_a_name_no_rule_set_can_have_is_not_found_without_asking_the_database(api: Api) -> None:
    """A NUL in the path made PostgreSQL refuse the query, answered as 422 ``invalid-data``
    (undeclared for these routes). No set can have such a name: 404, as for any unknown set."""
    worker = api.headers(Role.CASEWORKER)
    for name in ("%00", "Upper", "a%20b", "x" * 101):
        read = await api.client.get(f"/v1/rule-sets/{name}", headers=worker)
        assert read.status_code == 404 and problem_code(read.json()) == "not-found", (name, read.text)
        evaluated = await api.client.post(f"/v1/rule-sets/{name}/evaluate", json={"facts": {}}, headers=worker)
        assert evaluated.status_code == 404 and problem_code(evaluated.json()) == "not-found", (name, evaluated.text)
