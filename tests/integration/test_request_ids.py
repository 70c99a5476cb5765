"""The request id: kept when sane, replaced when not, on every log line of the request, on ONE
access line that never shows a token or a body, stamped as the correlation id of the events
the request stages, and on the consumer's log line for them (over real RabbitMQ)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import structlog
from dependency_injector import providers

from craig.domain.event_catalogue import CASE_OPENED
from craig.domain.events import EventEnvelope
from craig.entrypoints.container import Container
from craig.entrypoints.http.app import create_app
from craig.entrypoints.runtime import running
from craig.entrypoints.workers.messaging import consumers_running
from craig.ports.messaging import Subscription
from craig.ports.unit_of_work import UnitOfWork
from tests.support.apps import auth, live_server, make_container, make_settings, serving, token
from tests.support.buses import FAST_RETRIES, rabbit_bus
from tests.support.logs import craig_logging, json_lines
from tests.support.services import BrokerNames

pytestmark = pytest.mark.integration

NEW_CASE = {"title": "Doe family", "family_name": "Doe-Secret-Name"}


@pytest.fixture
async def memory_app(tmp_path: Path) -> AsyncIterator[tuple[Container, httpx.AsyncClient]]:
    async with serving("memory", tmp_path) as (container, client):
        yield container, client


async def staged(container: Container) -> list[EventEnvelope]:
    async with container.outbox_relay_store().claim_batch(1000) as batch:
        return [r.envelope for r in batch.events]


@pytest.mark.parametrize("sent", ["abc-123", "A.b_c:d-9", "x" * 128])
async def test_a_sane_request_id_is_kept(memory_app: tuple[Container, httpx.AsyncClient], sent: str) -> None:
    container, client = memory_app
    response = await client.get("/v1/cases", headers={**auth(container), "X-Request-ID": sent})
    assert response.headers["x-request-id"] == sent


@pytest.mark.parametrize("sent", [b"", b"x" * 129, b"has space", b"semi;colon", "é".encode(), b"a\tb", b"<script>"])
async def test_an_insane_request_id_is_replaced(memory_app: tuple[Container, httpx.AsyncClient], sent: bytes) -> None:
    container, client = memory_app
    response = await client.get("/v1/cases", headers={**auth(container), "X-Request-ID": sent})
    assert re.fullmatch(r"[0-9a-f]{32}", response.headers["x-request-id"])


async def test_one_access_line_per_request_with_its_fields_and_never_a_token_or_a_body(
    memory_app: tuple[Container, httpx.AsyncClient], capsys: pytest.CaptureFixture[str]
) -> None:
    container, client = memory_app
    bearer = token(container)
    with craig_logging():
        opened = await client.post(
            "/v1/cases",
            json=NEW_CASE,
            headers={"Authorization": f"Bearer {bearer}", "X-Request-ID": "req-open-1"},
        )
        assert opened.status_code == 201, opened.text
        case_id = opened.json()["id"]
        read = await client.get(f"/v1/cases/{case_id}?", headers={"Authorization": f"Bearer {bearer}"})
        assert read.status_code == 200
        unknown = await client.get("/v1/no-such-route", headers={"X-Request-ID": "req-404"})
        assert unknown.status_code == 404
        refused = await client.get("/v1/cases", headers={"Authorization": "Bearer not-a-token"})
        assert refused.status_code == 401
    err = capsys.readouterr().err
    assert bearer not in err and "not-a-token" not in err and "Doe-Secret-Name" not in err
    lines = json_lines(err)
    access = [line for line in lines if line["logger"] == "craig.access"]
    assert len(access) == 4
    first = access[0]
    assert first == {
        "event": "request",
        "logger": "craig.access",
        "level": "info",
        "timestamp": first["timestamp"],
        "method": "POST",
        "route": "/v1/cases",  # the template, never the raw path or its query
        "status": 201,
        "duration_ms": first["duration_ms"],
        "request_id": "req-open-1",
        "actor": first["actor"],
        "client_ip": "127.0.0.1",
    }
    assert first["duration_ms"] >= 0 and first["actor"]
    assert access[1]["route"] == "/v1/cases/{case_id}" and case_id not in err
    assert access[2]["request_id"] == "req-404" and access[2]["status"] == 404 and access[2]["actor"] is None
    assert access[2]["route"] is None
    assert access[3]["status"] == 401 and access[3]["actor"] is None and access[3]["route"] == "/v1/cases"
    # every line written while the request was handled carries its id
    assert all(line.get("request_id") == "req-open-1" for line in lines[: lines.index(first)])
    # ... and the event it staged carries it as its correlation id
    [event] = [e for e in await staged(container) if e.aggregate_id == case_id]
    assert event.type == CASE_OPENED.name and event.correlation_id == "req-open-1"


async def test_a_request_without_an_id_stamps_the_id_it_was_given(
    memory_app: tuple[Container, httpx.AsyncClient],
) -> None:
    container, client = memory_app
    opened = await client.post("/v1/cases", json=NEW_CASE, headers=auth(container))
    [event] = [e for e in await staged(container) if e.aggregate_id == opened.json()["id"]]
    assert event.correlation_id == opened.headers["x-request-id"]


@attrs.define
class Probe:
    arrived: asyncio.Event = attrs.field(factory=asyncio.Event)
    handled: list[EventEnvelope] = attrs.field(factory=list)

    async def __call__(self, envelope: EventEnvelope, _uow: UnitOfWork) -> None:
        structlog.get_logger("tests.probe").info("probe handled the event")
        self.handled.append(envelope)
        self.arrived.set()


@pytest.mark.postgres
@pytest.mark.rabbit
async def test_the_consumer_logs_with_the_request_id_of_the_event_it_handles(
    pg_url: str, rabbit_url: str, broker_names: BrokerNames, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    container = make_container(make_settings("postgres", tmp_path, pg_url, inbox=FAST_RETRIES))
    container.event_bus.override(providers.Object(rabbit_bus(rabbit_url, broker_names)))
    for name in ("request-id-probe", *(f"request-id-probe.retry.{n}" for n in range(1, 6)), "dead-letters"):
        broker_names.queue(name)  # deleted after the test
    probe = Probe()
    subscription = Subscription("request-id-probe", (CASE_OPENED.name,), probe)
    body: dict[str, Any] = NEW_CASE
    with craig_logging():
        async with (
            running(container),
            live_server(create_app(container)) as base,
            consumers_running(container, subscriptions=[subscription]),
            httpx.AsyncClient(base_url=base, timeout=60) as client,
        ):
            opened = await client.post("/v1/cases", json=body, headers={**auth(container), "X-Request-ID": "req-77"})
            assert opened.status_code == 201, opened.text
            assert (await container.outbox_relay().drain_once()).published == 1
            await asyncio.wait_for(probe.arrived.wait(), 30)
    [event] = probe.handled
    assert event.correlation_id == "req-77"
    lines = json_lines(capsys.readouterr().err)
    [probe_line] = [line for line in lines if line["event"] == "probe handled the event"]
    [handled] = [line for line in lines if line["event"] == "event handled"]
    assert probe_line["request_id"] == "req-77" and handled["request_id"] == "req-77"
    assert handled["consumer"] == "request-id-probe" and handled["event_type"] == CASE_OPENED.name
