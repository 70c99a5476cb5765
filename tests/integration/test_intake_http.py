"""``POST /intake/referrals`` over real HTTP, on the memory adapters and on real PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from sqlalchemy import text

from craig.entrypoints.container import Container
from tests.support.apps import serving
from tests.support.problems import problem_code

pytestmark = pytest.mark.integration

HSTS = "max-age=31536000; includeSubDomains"
FORM: dict[str, Any] = {
    "reporter": {"name": "Olive Neighbour", "phone": "+44 161 496 0000", "email": "olive@example.net"},
    "child": {"first_name": "Rosalind", "age": 2},
    "concern": "Rosalind was left alone in the flat all night, crying and hungry",
    "location": "12 Quarry Lane",
}
SECRETS = ("Olive", "Neighbour", "496 0000", "olive@example.net", "Rosalind", "crying", "Quarry")


@attrs.define
class Intake:
    container: Container
    client: httpx.AsyncClient
    kind: str

    async def raw_referrals(self) -> list[dict[str, Any]]:
        if self.kind == "memory":
            return [attrs.asdict(r, recurse=False) for r in self.container.memory_database().raw("referrals").values()]
        async with self.container.postgres().transaction() as conn:
            return [dict(r) for r in (await conn.execute(text("SELECT * FROM referrals"))).mappings()]

    async def staged(self, event_type: str) -> list[dict[str, Any]]:
        async with self.container.outbox_relay_store().claim_batch(1000) as batch:
            return [dict(e.envelope.payload) for e in batch.events if e.envelope.type == event_type]


@pytest.fixture(params=["memory", "postgres"])
async def intake(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Intake]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with serving(request.param, tmp_path, pg_url) as (container, client):
        yield Intake(container, client, request.param)


async def test_a_referral_is_accepted_scored_encrypted_and_announced(intake: Intake) -> None:
    response = await intake.client.post("/intake/referrals", json=FORM)
    assert response.status_code == 202, response.text
    body = response.json()
    assert set(body) == {"id", "priority", "reference"}
    assert body["priority"] == "urgent"  # default intake-triage: under 3 and neglect
    assert body["reference"].startswith("REF-")
    assert response.headers["strict-transport-security"] == HSTS

    (raw,) = await intake.raw_referrals()
    assert str(raw["id"]) == body["id"] and raw["priority"] == "urgent" and raw["triage_version"] == 1
    dump = " ".join(str(v) for v in raw.values())
    for secret in SECRETS:
        assert secret not in dump

    (event,) = await intake.staged("intake.referral_received")
    assert event["referral_id"] == body["id"] and event["priority"] == "urgent"
    assert not any(secret in str(event) for secret in SECRETS)

    async with intake.container.uow() as uow:
        stored = await uow.referrals.get(uuid.UUID(body["id"]))
    assert stored is not None and stored.reporter.email == "olive@example.net" and stored.child.age == 2


async def test_no_rule_matching_gives_a_null_priority(intake: Intake) -> None:
    supervisor = {"Authorization": f"Bearer {_token(intake.container)}"}
    created = await intake.client.post(
        "/v1/rule-sets",
        json={
            "name": "intake-triage",
            "rules": [{"when": {"fact": "child_age", "op": "gt", "value": 99}, "then": "x"}],
        },
        headers=supervisor,
    )
    assert created.status_code == 201
    response = await intake.client.post("/intake/referrals", json=FORM)
    assert response.status_code == 202 and response.json()["priority"] is None


def _token(container: Container) -> str:
    from craig.domain.access import Role
    from tests.support.apps import token

    return token(container, role=Role.SUPERVISOR)


BAD_FORMS: list[tuple[dict[str, Any], int, str]] = [
    ({"reporter": {"name": "  "}}, 422, "invalid-referral"),
    ({"reporter": {"name": "Pat", "email": "not-an-email"}}, 422, "invalid-referral"),
    ({"child": {"first_name": "Sam", "age": 40}}, 422, "invalid-referral"),
    ({"concern": ""}, 422, "invalid-referral"),
    ({"concern": None}, 400, "invalid-request"),
    ({"child": {"first_name": "Sam", "age": "two"}}, 400, "invalid-request"),
    ({"unexpected": 1}, 400, "invalid-request"),
]


async def test_bad_forms_get_a_clear_problem(intake: Intake) -> None:
    for change, status, problem in BAD_FORMS:
        response = await intake.client.post("/intake/referrals", json={**FORM, **change})
        assert response.status_code == status, (change, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        assert problem_code(response.json()) == problem
        assert response.headers["strict-transport-security"] == HSTS
    assert await intake.raw_referrals() == []


async def test_an_idempotency_key_replays_the_same_referral(intake: Intake) -> None:
    headers = {"Idempotency-Key": f"form-{uuid.uuid4()}"}
    first = await intake.client.post("/intake/referrals", json=FORM, headers=headers)
    again = await intake.client.post("/intake/referrals", json=FORM, headers=headers)
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json() and again.headers["idempotent-replayed"] == "true"
    assert len(await intake.raw_referrals()) == 1
    other = await intake.client.post("/intake/referrals", json={**FORM, "concern": "different"}, headers=headers)
    assert other.status_code == 422


async def test_hsts_on_every_response_and_the_documentation_is_public(intake: Intake) -> None:
    responses = [
        await intake.client.get("/no/such/page"),
        await intake.client.get("/v1/rule-sets"),  # 401
        await intake.client.get("/intake/referrals"),  # 405
        await intake.client.post(
            "/intake/referrals", content=b"{not json", headers={"Content-Type": "application/json"}
        ),
        await intake.client.get("/health/live"),
        await intake.client.get("/swagger-ui"),
    ]
    assert [r.status_code for r in responses] == [404, 401, 405, 400, 200, 200]
    assert all(r.headers["strict-transport-security"] == HSTS for r in responses)

    spec = await intake.client.get("/api-doc/openapi.json")
    assert spec.status_code == 200 and spec.headers["strict-transport-security"] == HSTS
    paths = spec.json()["paths"]
    assert {"/intake/referrals", "/v1/rule-sets", "/v1/rule-sets/{name}", "/v1/rule-sets/{name}/evaluate"} <= set(paths)
    assert paths["/intake/referrals"]["post"].get("security") in (None, [])
