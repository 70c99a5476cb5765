"""The Idempotency-Key contract over real HTTP, on the memory adapters and on real PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from sqlalchemy import text

from craig.domain.access import Role
from craig.entrypoints.container import Container
from craig.entrypoints.http.app import create_app
from craig.entrypoints.settings import IdempotencySettings
from craig.ports.errors import DatabaseUnavailable
from tests.support import probe
from tests.support.apps import auth, make_container, make_settings, serving
from tests.support.problems import problem_code

pytestmark = pytest.mark.integration


@attrs.define
class Api:
    container: Container
    client: httpx.AsyncClient
    headers: dict[str, str]
    kind: str

    async def post(
        self, path: str, body: Any, key: str | None = None, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        merged = dict(self.headers)
        if key is not None:
            merged["Idempotency-Key"] = key
        merged.update(headers or {})
        return await self.client.post(
            path,
            content=json.dumps(body) if not isinstance(body, bytes) else body,
            headers={"Content-Type": "application/json", **merged},
        )

    async def effects(self, name: str) -> int:
        """Committed outbox events staged by the probe for ``name``."""
        store = self.container.outbox_relay_store()
        async with store.claim_batch(10_000) as batch:
            return sum(1 for e in batch.events if e.envelope.aggregate_id == name)


async def _api(kind: str, request: pytest.FixtureRequest, tmp_path: Path, **sections: Any) -> AsyncIterator[Api]:
    pg_url = request.getfixturevalue("pg_url") if kind == "postgres" else None
    async with serving(kind, tmp_path, pg_url, extra_v1_routes=probe.ROUTES, **sections) as (
        container,
        client,
    ):
        yield Api(container, client, auth(container), kind)


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    async for value in _api(request.param, request, tmp_path):
        yield value


@pytest.fixture
async def pg_api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    async for value in _api("postgres", request, tmp_path):
        yield value


def name() -> str:
    return uuid.uuid4().hex


async def test_without_key_the_request_runs_normally(api: Api) -> None:
    n = name()
    first = await api.post(f"/v1/probe/{n}", {"a": 1})
    second = await api.post(f"/v1/probe/{n}", {"a": 1})
    assert first.status_code == second.status_code == 201
    assert "idempotent-replayed" not in second.headers
    assert probe.EXECUTIONS[n] == 2


async def test_retry_replays_byte_for_byte(api: Api) -> None:
    n, key = name(), name()
    first = await api.post(f"/v1/probe/{n}", {"a": 1}, key)
    second = await api.post(f"/v1/probe/{n}", {"a": 1}, key)
    assert first.status_code == second.status_code == 201
    assert second.content == first.content
    assert second.headers["idempotent-replayed"] == "true"
    for header in ("content-type", "location", "etag"):
        assert second.headers[header] == first.headers[header]
    assert probe.EXECUTIONS[n] == 1
    assert await api.effects(n) == 1


async def test_a_request_refused_for_its_query_string_is_not_replayed_for_the_corrected_one(api: Api) -> None:
    """The query string is part of the fingerprint: the corrected retry is another request, and
    the key says so (422) instead of replaying the refusal of the first."""
    key = uuid.uuid4().hex
    refused = await api.post("/v1/cases?bogus=1", {"title": "Doe"}, key=key)
    assert refused.status_code == 400 and problem_code(refused.json()) == "unknown-parameter"
    again = await api.post("/v1/cases", {"title": "Doe"}, key=key)
    assert again.status_code == 422 and problem_code(again.json()) == "idempotency-key-reused"
    assert "idempotent-replayed" not in again.headers
    fresh = await api.post("/v1/cases", {"title": "Doe"}, key=uuid.uuid4().hex)
    assert fresh.status_code == 201


async def test_json_key_order_and_whitespace_are_the_same_body(api: Api) -> None:
    n, key = name(), name()
    await api.post(f"/v1/probe/{n}", b'{"a": 1, "b": [1.0, 2]}', key)
    replay = await api.post(f"/v1/probe/{n}", b'{"b":[1,2.00],"a":1}', key)
    assert replay.headers.get("idempotent-replayed") == "true"
    assert probe.EXECUTIONS[n] == 1


async def test_same_key_different_body_is_422_and_does_not_run(api: Api) -> None:
    n, key = name(), name()
    await api.post(f"/v1/probe/{n}", {"a": 1}, key)
    reused = await api.post(f"/v1/probe/{n}", {"a": 2}, key)
    assert reused.status_code == 422
    assert reused.headers["content-type"] == "application/problem+json"
    assert problem_code(reused.json()) == "idempotency-key-reused"
    assert probe.EXECUTIONS[n] == 1


async def test_uploads_that_differ_only_after_a_semicolon_in_the_file_name_are_different_bodies(
    pg_api: Api,
) -> None:
    """``filename="report;v1.pdf"`` and ``filename="report;v2.pdf"``: a parameter parser that
    splits the header at every ``;`` would see ``report`` twice, fingerprint both uploads alike
    and replay the first file for the second. The quoted string keeps its ``;``."""
    case = (await pg_api.post("/v1/cases", {"title": "Doe"})).json()["id"]
    contact_body = {"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00Z", "summary": "Visited."}
    contact = (await pg_api.post(f"/v1/cases/{case}/contacts", contact_body)).json()["id"]
    path, key = f"/v1/cases/{case}/contacts/{contact}/attachments", name()
    pdf = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"

    async def upload(file_name: str) -> httpx.Response:
        files = {"file": (file_name, pdf, "application/pdf")}
        return await pg_api.client.post(path, files=files, headers={**pg_api.headers, "Idempotency-Key": key})

    first = await upload("report;v1.pdf")
    assert first.status_code == 201, first.text
    assert first.json()["file_name"] == "report;v1.pdf"
    replay = await upload("report;v1.pdf")
    assert replay.headers.get("idempotent-replayed") == "true" and replay.json() == first.json()
    reused = await upload("report;v2.pdf")
    assert reused.status_code == 422, reused.text
    assert reused.headers["content-type"] == "application/problem+json"
    assert problem_code(reused.json()) == "idempotency-key-reused"
    listed = (await pg_api.client.get(path, headers=pg_api.headers)).json()["items"]
    assert [item["file_name"] for item in listed] == ["report;v1.pdf"]


async def test_one_key_on_one_resource_is_one_request_however_its_id_is_spelled(api: Api) -> None:
    """Litestar takes a UUID in the path in several spellings; the key's scope is the resource."""
    case = await api.post("/v1/cases", {"title": "spelled"})
    case_id = uuid.UUID(case.json()["id"])
    body = {"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00Z", "summary": "s"}
    key = name()
    spellings = [str(case_id), str(case_id).upper(), case_id.hex, f"{{{case_id}}}", f"urn:uuid:{case_id}"]
    answers = [await api.post(f"/v1/cases/{spelled}/contacts", body, key) for spelled in spellings]
    assert [a.status_code for a in answers] == [201] * len(spellings)
    assert [a.headers.get("idempotent-replayed") for a in answers] == [None] + ["true"] * (len(spellings) - 1)
    assert {a.json()["id"] for a in answers} == {answers[0].json()["id"]}
    listed = await api.client.get(f"/v1/cases/{case_id}/contacts", headers=api.headers)
    assert len(listed.json()["items"]) == 1


async def test_same_key_from_another_user_runs_independently(api: Api) -> None:
    n, key = name(), name()
    mine = await api.post(f"/v1/probe/{n}", {"a": 1}, key)
    theirs = await api.post(f"/v1/probe/{n}", {"a": 1}, key, headers=auth(api.container, name="Bob"))
    assert theirs.status_code == 201 and "idempotent-replayed" not in theirs.headers
    assert theirs.json()["by"] == "Bob" and mine.json()["by"] == "Ann"
    assert probe.EXECUTIONS[n] == 2


@pytest.mark.parametrize("key", ["", "x" * 256, "clé", "tab\there"])
async def test_malformed_key_is_400(api: Api, key: str) -> None:
    n = name()
    headers = {**api.headers, "Content-Type": "application/json"}
    response = await api.client.post(
        f"/v1/probe/{n}", content=b"{}", headers=[*headers.items(), ("Idempotency-Key", key.encode("utf-8"))]
    )
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
    assert probe.EXECUTIONS[n] == 0


async def test_key_of_255_printable_characters_is_accepted(api: Api) -> None:
    response = await api.post(f"/v1/probe/{name()}", {}, "~" * 255)
    assert response.status_code == 201


async def test_route_marked_required_refuses_a_missing_key(api: Api) -> None:
    missing = await api.post(f"/v1/probe-required/{name()}", {})
    assert missing.status_code == 400
    assert problem_code(missing.json()) == "idempotency-key-required"
    assert (await api.post(f"/v1/probe-required/{name()}", {}, name())).status_code == 201


async def test_5xx_is_not_stored_and_the_retry_runs_again(api: Api) -> None:
    n, key = name(), name()
    failed = await api.post(f"/v1/probe/{n}", {"fail": True}, key)
    assert failed.status_code == 500
    assert failed.headers["content-type"] == "application/problem+json"
    assert await api.effects(n) == 0  # the failed run's effect was rolled back
    retried = await api.post(f"/v1/probe/{n}", {"fail": True}, key)
    assert retried.status_code == 500 and "idempotent-replayed" not in retried.headers
    assert probe.EXECUTIONS[n] == 2


async def test_4xx_outcome_is_final_and_replayed(api: Api) -> None:
    n, key = name(), name()
    first = await api.post(f"/v1/probe/{n}", {"status": 409}, key)
    second = await api.post(f"/v1/probe/{n}", {"status": 409}, key)
    assert first.status_code == second.status_code == 409
    assert second.headers["idempotent-replayed"] == "true"
    assert probe.EXECUTIONS[n] == 1


@pytest.mark.parametrize("status", [429, 409])
async def test_an_answer_that_says_retry_after_is_not_stored(api: Api, status: int) -> None:
    n, key = name(), name()
    first = await api.post(f"/v1/probe/{n}", {"status": status, "retry_after": 1}, key)
    assert first.status_code == status and first.headers["retry-after"] == "1"
    second = await api.post(f"/v1/probe/{n}", {"status": status, "retry_after": 1}, key)
    assert "idempotent-replayed" not in second.headers  # the retry ran again, as it was told to
    assert probe.EXECUTIONS[n] == 2


async def test_large_body_is_replayed_empty_with_a_marker(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    async for api in _api("memory", request, tmp_path, idempotency=IdempotencySettings(max_body_bytes=100)):
        n, key = name(), name()
        first = await api.post(f"/v1/probe/{n}", {"pad": 500}, key)
        replay = await api.post(f"/v1/probe/{n}", {"pad": 500}, key)
        assert first.status_code == replay.status_code == 201
        assert len(first.content) > 500
        assert replay.content == b""
        assert replay.headers["idempotency-body-omitted"] == "true"
        assert replay.headers["location"] == first.headers["location"]


async def test_losers_wait_for_the_winner_and_get_its_replay(api: Api) -> None:
    n, key = name(), name()
    responses = await asyncio.gather(*(api.post(f"/v1/probe/{n}", {"sleep": 0.5}, key) for _ in range(8)))
    assert {r.status_code for r in responses} == {201}
    assert len({r.content for r in responses}) == 1
    assert sum(r.headers.get("idempotent-replayed") == "true" for r in responses) == 7
    assert probe.EXECUTIONS[n] == 1


async def test_losers_past_the_ceiling_get_409_with_retry_after(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    policy = IdempotencySettings(claim_ttl_seconds=30, wait_ceiling_seconds=0.3)
    async for api in _api("postgres", request, tmp_path, idempotency=policy):
        n, key = name(), name()
        winner = asyncio.create_task(api.post(f"/v1/probe/{n}", {"sleep": 2}, key))
        await asyncio.sleep(0.3)
        loser = await api.post(f"/v1/probe/{n}", {"sleep": 2}, key)
        assert loser.status_code == 409
        assert problem_code(loser.json()) == "idempotency-request-in-progress"
        assert 1 <= int(loser.headers["retry-after"]) <= 30
        assert (await winner).status_code == 201


async def test_a_hundred_concurrent_duplicates_run_the_handler_once(pg_api: Api) -> None:
    n, key = name(), name()
    responses = await asyncio.gather(*(pg_api.post(f"/v1/probe/{n}", {"sleep": 0.2}, key) for _ in range(100)))
    assert probe.EXECUTIONS[n] == 1
    assert await pg_api.effects(n) == 1
    assert all(r.status_code < 500 for r in responses)
    created = [r for r in responses if r.status_code == 201]
    assert len({r.content for r in created}) == 1
    for r in responses:
        assert r.status_code in (201, 409)
        if r.status_code == 409:
            assert int(r.headers["retry-after"]) >= 1


async def test_failure_at_finalize_commits_no_effect(pg_api: Api) -> None:
    """Inject a database failure exactly at finalize: the handler's effect must not be committed."""
    from craig.adapters.postgres import idempotency as pg_idempotency

    original = pg_idempotency.PostgresIdempotencySlots.finalize_succeeded
    calls = 0

    async def failing(self: Any, *args: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise DatabaseUnavailable("injected failure at finalize")
        await original(self, *args)

    pg_idempotency.PostgresIdempotencySlots.finalize_succeeded = failing  # type: ignore[method-assign]
    try:
        n, key = name(), name()
        first = await pg_api.post(f"/v1/probe/{n}", {"a": 1}, key)
        assert first.status_code == 503
        assert await pg_api.effects(n) == 0
        second = await pg_api.post(f"/v1/probe/{n}", {"a": 1}, key)
        assert second.status_code == 201 and "idempotent-replayed" not in second.headers
        third = await pg_api.post(f"/v1/probe/{n}", {"a": 1}, key)
        assert third.headers["idempotent-replayed"] == "true"
        assert await pg_api.effects(n) == 1
    finally:
        pg_idempotency.PostgresIdempotencySlots.finalize_succeeded = original  # type: ignore[method-assign]


async def test_slot_of_a_dead_owner_is_recovered_after_its_ttl_not_before(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    policy = IdempotencySettings(claim_ttl_seconds=1.5, wait_ceiling_seconds=0.2)
    async for api in _api("postgres", request, tmp_path, idempotency=policy):
        n, key = name(), name()
        # A process claims the slot and dies before finalizing: claim through the same layer,
        # with the claim's owner simulated by a direct store claim for the same user and body.
        from craig.usecases.idempotency import IdempotentRequests

        sub = uuid.uuid4()
        headers = auth(api.container, sub=sub, role=Role.CASEWORKER)
        claim = IdempotentRequests.claim_request(
            user_sub=sub,
            method="POST",
            path=f"/v1/probe/{n}",
            key=key,
            content_type="application/json",
            body=b'{"a": 1}',
        )
        from datetime import timedelta

        await api.container.idempotency_store().try_claim(claim, timedelta(seconds=1.5))
        before = await api.post(f"/v1/probe/{n}", {"a": 1}, key, headers=headers)
        assert before.status_code == 409 and probe.EXECUTIONS[n] == 0
        await asyncio.sleep(1.6)
        after = await api.post(f"/v1/probe/{n}", {"a": 1}, key, headers=headers)
        assert after.status_code == 201 and probe.EXECUTIONS[n] == 1


async def test_a_live_handler_slower_than_the_claim_ttl_runs_once(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The winner extends its claim while its handler runs (three times the TTL here): the
    duplicates wait and get 409 busy or the replay; none of them takes the slot over."""
    ttl = 1.5
    policy = IdempotencySettings(claim_ttl_seconds=ttl, wait_ceiling_seconds=ttl)
    async for api in _api("postgres", request, tmp_path, idempotency=policy):
        n, key = name(), name()
        winner = asyncio.create_task(api.post(f"/v1/probe/{n}", {"a": 1}, key, headers={"X-Probe-Sleep": str(3 * ttl)}))
        duplicates = []
        for _ in range(4):  # spread over the handler's run, each waiting up to the ceiling
            await asyncio.sleep(ttl / 2)
            duplicates.append(asyncio.create_task(api.post(f"/v1/probe/{n}", {"a": 1}, key)))
        first = await winner
        answers = await asyncio.gather(*duplicates)
        assert first.status_code == 201, first.text
        for answer in answers:
            assert answer.status_code in (201, 409), answer.text
            if answer.status_code == 409:
                assert problem_code(answer.json()) == "idempotency-request-in-progress"
            else:
                assert answer.headers["idempotent-replayed"] == "true" and answer.content == first.content
        assert any(answer.status_code == 409 for answer in answers)  # they did overlap the handler
        replay = await api.post(f"/v1/probe/{n}", {"a": 1}, key)
        assert replay.headers["idempotent-replayed"] == "true" and replay.content == first.content
        assert probe.EXECUTIONS[n] == 1
        assert await api.effects(n) == 1


async def _slots(container: Container) -> int:
    async with container.postgres().transaction() as conn:
        return int((await conn.execute(text("SELECT count(*) FROM idempotency_responses"))).scalar_one())


async def test_a_disconnect_before_the_end_of_the_body_claims_nothing_and_runs_nothing(
    pg_url: str, tmp_path: Path
) -> None:
    container = make_container(make_settings("postgres", tmp_path, pg_url))
    app = create_app(container, extra_v1_routes=probe.ROUTES)
    n, key = name(), name()
    body = json.dumps({"a": 1, "note": "x" * 200}).encode()
    headers = {**auth(container), "Content-Type": "application/json", "Idempotency-Key": key}
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": f"/v1/probe/{n}",
        "raw_path": f"/v1/probe/{n}".encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        + [(b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    incoming = iter([{"type": "http.request", "body": body[:50], "more_body": True}, {"type": "http.disconnect"}])
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return next(incoming, {"type": "http.disconnect"})

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async with app.lifespan():
        await app(scope, receive, send)  # type: ignore[arg-type]
        assert probe.EXECUTIONS[n] == 0
        assert await _slots(container) == 0
        assert not [m for m in sent if m["type"] == "http.response.start"]  # no one to answer
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://craig") as client:
            retried = await client.post(f"/v1/probe/{n}", content=body, headers=headers)
            replayed = await client.post(f"/v1/probe/{n}", content=body, headers=headers)
    assert retried.status_code == 201, retried.text
    assert "idempotent-replayed" not in retried.headers
    assert replayed.headers["idempotent-replayed"] == "true"
    assert probe.EXECUTIONS[n] == 1
