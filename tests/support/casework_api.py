"""A casework client over real HTTP: people with tokens, referrals from the public form, cases,
homes and placements, and the events staged in the outbox."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import attrs
import httpx

from craig.domain.access import Role
from craig.entrypoints.container import Container
from tests.support.apps import auth
from tests.support.problems import problem_code

PROBLEM = "application/problem+json"


@attrs.define
class Person:
    sub: uuid.UUID
    headers: dict[str, str]


@attrs.define
class CaseworkApi:
    container: Container
    client: httpx.AsyncClient
    worker: Person
    supervisor: Person
    screener: Person

    @classmethod
    def of(cls, container: Container, client: httpx.AsyncClient) -> CaseworkApi:
        def person(role: Role, name: str) -> Person:
            sub = uuid.uuid4()
            return Person(sub, auth(container, role=role, sub=sub, name=name))

        return cls(
            container,
            client,
            person(Role.CASEWORKER, "Wes"),
            person(Role.SUPERVISOR, "Sue"),
            person(Role.SCREENER, "Sam"),
        )

    def person(self, role: Role, name: str = "Someone") -> Person:
        sub = uuid.uuid4()
        return Person(sub, auth(self.container, role=role, sub=sub, name=name))

    async def referral(self, concern: str = "Tom has bruises on his arms", age: int = 4) -> str:
        body = {"reporter": {"name": "Rita"}, "child": {"first_name": "Tom", "age": age}, "concern": concern}
        response = await self.client.post("/intake/referrals", json=body)
        assert response.status_code == 202, response.text
        return str(response.json()["id"])

    async def etag(self, path: str, who: Person | None = None) -> str:
        response = await self.client.get(path, headers=(who or self.supervisor).headers)
        assert response.status_code == 200, response.text
        return response.headers["etag"]

    async def case(self, who: Person | None = None, family_name: str = "Doe") -> dict[str, Any]:
        response = await self.client.post(
            "/v1/cases", json={"title": "Doe family", "family_name": family_name}, headers=(who or self.worker).headers
        )
        assert response.status_code == 201, response.text
        return response.json()  # type: ignore[no-any-return]

    async def home(self, capacity: int = 2) -> dict[str, Any]:
        response = await self.client.post(
            "/v1/foster-homes", json={"name": "Oak", "capacity": capacity}, headers=self.supervisor.headers
        )
        assert response.status_code == 201, response.text
        return response.json()  # type: ignore[no-any-return]

    async def place(self, case_id: str, home_id: str, status: str = "active") -> httpx.Response:
        body = {"case_id": case_id, "foster_home_id": home_id, "status": status, "start_date": "2026-03-01"}
        return await self.client.post("/v1/placements", json=body, headers=self.worker.headers)

    async def events(self, kind: str) -> list[dict[str, Any]]:
        """The payloads of committed, unpublished events of one type."""
        async with self.container.outbox_relay_store().claim_batch(10_000) as batch:
            return [dict(r.envelope.payload) for r in batch.events if r.envelope.type == kind]

    async def event_counts(self, kind: str) -> Counter[str]:
        async with self.container.outbox_relay_store().claim_batch(10_000) as batch:
            return Counter(r.envelope.aggregate_id for r in batch.events if r.envelope.type == kind)


def problem_type(response: httpx.Response) -> str:
    assert response.headers["content-type"] == PROBLEM, response.text
    return problem_code(response.json())
