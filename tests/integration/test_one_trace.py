"""One trace from a user's POST to the partner and to the consumer, against real PostgreSQL,
RabbitMQ and the fake partner (a real HTTP server): the request's span, the send worker's call
to the partner, the relay's publish of the outcome event and the consumer's handling of it share
one trace id, each span's parent being the one that caused it. Spans are recorded in memory."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from dependency_injector import providers
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from craig.domain.access import Role
from craig.domain.event_catalogue import EXCHANGE_SENT
from craig.domain.events import EventEnvelope
from craig.entrypoints.container import Container
from craig.entrypoints.http.app import create_app
from craig.entrypoints.runtime import running
from craig.entrypoints.settings import OutboxSettings
from craig.entrypoints.workers.messaging import consumers_running
from craig.entrypoints.workers.send_jobs import send_job_scheduler
from craig.ports.messaging import Subscription
from craig.ports.unit_of_work import UnitOfWork
from tests.support.apps import auth, live_server, make_container, make_settings
from tests.support.buses import FAST_RETRIES, rabbit_bus
from tests.support.fake_partner import registration, serving_partner
from tests.support.logs import craig_logging, json_lines
from tests.support.services import BrokerNames
from tests.support.tracing import ancestors, memory_spans, named, parent_id

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.rabbit]

TRANSACTIONS = "/v1/exchange/transactions"
#: The caller's own trace context (W3C): the request's span continues it.
CALLER_TRACE, CALLER_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
CALLER = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"


@attrs.define
class Probe:
    """A consumer of ``exchange.sent`` that remembers what it handled."""

    handled: list[EventEnvelope] = attrs.field(factory=list)
    arrived: asyncio.Event = attrs.field(factory=asyncio.Event)

    async def __call__(self, envelope: EventEnvelope, _uow: UnitOfWork) -> None:
        self.handled.append(envelope)
        self.arrived.set()


@pytest.fixture
async def container(
    pg_url: str, rabbit_url: str, broker_names: BrokerNames, tmp_path: Path
) -> AsyncIterator[Container]:
    settings = make_settings(
        "postgres", tmp_path, pg_url, inbox=FAST_RETRIES, outbox=OutboxSettings(poll_interval_seconds=0.2)
    )
    made = make_container(settings)
    made.event_bus.override(providers.Object(rabbit_bus(rabbit_url, broker_names)))
    for name in ("trace-probe", *(f"trace-probe.retry.{n}" for n in range(1, 6)), "dead-letters"):
        broker_names.queue(name)  # deleted after the test
    async with running(made):
        try:
            yield made
        finally:
            await made.partner_gateway().aclose()


async def test_a_post_the_partner_call_the_publish_and_the_consume_are_one_trace(
    container: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    with memory_spans() as spans:
        probe = Probe()
        subscription = Subscription("trace-probe", (EXCHANGE_SENT.name,), probe)
        async with (
            serving_partner() as (fake, partner_base),
            live_server(create_app(container)) as base,
            consumers_running(container, subscriptions=[subscription]),
        ):
            async with httpx.AsyncClient(base_url=base, timeout=60) as client:
                body: dict[str, Any] = registration(partner_base, "County Health", rate_limit_rpm=6000)
                admin = auth(container, role=Role.ADMIN)
                partner = (await client.post("/v1/exchange/partners", json=body, headers=admin)).json()
                spans.clear()
                sent = await client.post(
                    TRANSACTIONS,
                    json={"partner_ids": [partner["id"]], "payload": {"case": "c-1"}},
                    headers={**auth(container), "X-Request-ID": "trace-me-1", "traceparent": CALLER},
                )
                assert sent.status_code == 202, sent.text
                [job] = sent.json()["jobs"]

            worker = send_job_scheduler(container)  # the send worker delivers the job to the partner
            capsys.readouterr()  # only the send worker's lines, in Craig's format, are read below
            try:
                with craig_logging():
                    await worker.drain()
            finally:
                await worker.aclose()
            logged = capsys.readouterr().err
            assert fake.delivered[job["correlation_id"]] == 1
            assert (await container.outbox_relay().drain_once()).published == 1  # exchange.sent
            await asyncio.wait_for(probe.arrived.wait(), 30)

        recorded = list(spans.get_finished_spans())
    [request] = named(recorded, f"POST {TRANSACTIONS}")
    [send_job] = named(recorded, "send job")
    [partner_call] = named(recorded, "partner POST")
    [publish] = named(recorded, f"publish {EXCHANGE_SENT.name}")
    [consume] = named(recorded, f"consume {EXCHANGE_SENT.name}")
    trace_id = request.context.trace_id
    assert trace_id == int(CALLER_TRACE, 16) and parent_id(request) == int(CALLER_SPAN, 16)
    assert request.kind is SpanKind.SERVER
    assert request.attributes is not None and request.attributes["http.route"] == TRANSACTIONS
    assert request.attributes["http.response.status_code"] == 202
    for span in (send_job, partner_call, publish, consume):
        assert span.context.trace_id == trace_id, span.name

    def caused_by_the_request(span: ReadableSpan) -> bool:
        return request.context.span_id in [a.context.span_id for a in ancestors(span, recorded)]

    # POST -> send job -> partner POST; POST -> publish -> consume
    assert caused_by_the_request(send_job) and caused_by_the_request(publish)
    assert parent_id(partner_call) == send_job.context.span_id and partner_call.kind is SpanKind.CLIENT
    assert parent_id(consume) == publish.context.span_id
    assert publish.kind is SpanKind.PRODUCER and consume.kind is SpanKind.CONSUMER
    # the request's transaction is a span of the trace too
    transactions = [s for s in named(recorded, "db transaction") if parent_id(s) == request.context.span_id]
    assert transactions

    # The partner received the call's own context and the request's id, next to the job's own id.
    [headers] = fake.headers
    assert headers["traceparent"].startswith(f"00-{trace_id:032x}-{partner_call.context.span_id:016x}-")
    assert headers["x-request-id"] == "trace-me-1"
    assert headers["x-correlation-id"] == job["correlation_id"]
    # The outcome event kept its job's correlation id (the partner's dedupe key).
    [event] = probe.handled
    assert event.correlation_id == job["correlation_id"] and event.traceparent is None
    # The send worker's line tells the request that made the job.
    [dispatched] = [line for line in json_lines(logged) if line["event"] == "send job dispatched"]
    assert dispatched["request_id"] == "trace-me-1" and dispatched["job_id"] == job["id"]
