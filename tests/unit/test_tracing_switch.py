"""Tracing is switched on by the standard OTEL_* variables only, and otherwise changes nothing."""

from __future__ import annotations

import pytest

from craig.adapters.telemetry import current_traceparent, sane_traceparent, span
from craig.entrypoints.tracing import configure_tracing, tracing_requested

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("environ", "exporters"),
    [
        ({}, []),
        ({"OTEL_SERVICE_NAME": "craig-api"}, []),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, ["otlp"]),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, ["otlp"]),
        ({"OTEL_TRACES_EXPORTER": "console"}, ["console"]),
        ({"OTEL_TRACES_EXPORTER": "otlp,console"}, ["otlp", "console"]),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, []),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}, []),
        ({"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, []),
    ],
)
def test_the_otel_variables_decide_whether_tracing_is_on(environ: dict[str, str], exporters: list[str]) -> None:
    assert tracing_requested(environ) == exporters


def test_unconfigured_tracing_installs_nothing() -> None:
    assert configure_tracing({}) is False
    assert configure_tracing({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}) is False


def test_outside_any_span_there_is_no_trace_context_to_carry() -> None:
    assert current_traceparent() is None
    with span("a span of its own") as current:
        current.set("craig.test", 1)  # never fails, whether a provider records it or not


@pytest.mark.parametrize(
    ("value", "sane"),
    [
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", True),
        ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", False),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", False),
        ("x" * 55, False),
        (None, False),
        (b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", False),
    ],
)
def test_only_a_well_formed_traceparent_is_continued(value: object, sane: bool) -> None:
    assert (sane_traceparent(value) is not None) is sane


CARRIED = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.mark.parametrize("parent", [CARRIED, {"traceparent": CARRIED}])
def test_a_carried_trace_context_is_current_inside_the_span_even_when_nothing_records(parent: object) -> None:
    with span("continues the carried trace", parent=parent):  # type: ignore[arg-type]
        inside = current_traceparent()
    assert inside is not None and inside.split("-")[1] == CARRIED.split("-")[1]
    assert current_traceparent() is None  # and only inside it


def test_an_invalid_parent_or_none_continues_nothing_carried() -> None:
    from craig.adapters.telemetry import recording

    for parent in (None, "garbage", {"traceparent": "garbage"}, {}):
        with span("nothing to continue", parent=parent) as current:
            inside = current_traceparent()
            if recording():  # an earlier test installed a tracer provider: a trace of its own
                assert inside is not None and inside.split("-")[1] != CARRIED.split("-")[1]
            else:  # nothing records it: the context stays as it was, and nothing is carried on
                assert inside is None and current.headers == {}


def test_originating_binds_a_request_id_for_the_block_and_restores_the_one_outside() -> None:
    from craig.adapters.telemetry import origin_request_id, originating

    with originating("outer"):
        with originating(None):
            assert origin_request_id() == "outer"  # None binds nothing new
        with originating("inner"):
            assert origin_request_id() == "inner"
        assert origin_request_id() == "outer"
        with pytest.raises(RuntimeError), originating("failing"):
            raise RuntimeError
        assert origin_request_id() == "outer"
    assert origin_request_id() is None


def test_a_writer_of_many_rows_stamps_each_with_the_origin_it_read_once_as_each_would_alone() -> None:
    """``stamped`` and ``job_origin`` with an origin read once by ``current_origin`` stamp as
    they do reading it themselves; what an envelope or a job already carries is kept."""
    from datetime import UTC, datetime

    from craig.adapters.telemetry import current_origin, job_origin, originating, stamped
    from craig.domain.events import EventEnvelope
    from craig.domain.exchange import SendJob
    from craig.usecases.ids import new_id

    now = datetime.now(UTC)
    envelopes = [
        EventEnvelope(
            id=new_id(),
            source="craig-test",
            type="test.happened",
            occurred_at=now,
            payload={},
            aggregate_type="case",
            aggregate_id="c-1",
            correlation_id=correlation,
            traceparent=traceparent,
        )
        for correlation in ("", "its-own")
        for traceparent in (None, f"00-{'1' * 32}-{'2' * 16}-01")
    ]
    jobs = [
        SendJob(
            id=new_id(),
            transaction_id=new_id(),
            partner_id=new_id(),
            correlation_id=new_id(),
            payload={},
            next_attempt_at=now,
            created_at=now,
            origin_request_id=request_id,
            traceparent=traceparent,
        )
        for request_id in (None, "its-own")
        for traceparent in (None, f"00-{'3' * 32}-{'4' * 16}-01")
    ]
    for request_id, parent in ((None, None), ("req-1", None), ("req-2", CARRIED)):
        with originating(request_id), span("writes", parent=parent):
            origin = current_origin()
            assert origin.request_id == request_id
            if parent is not None:  # (without one, a tracer provider an earlier test installed starts a trace)
                assert origin.traceparent is not None and origin.traceparent.split("-")[1] == CARRIED.split("-")[1]
            for envelope in envelopes:
                assert stamped(envelope, origin) == stamped(envelope)
            for job in jobs:
                assert job_origin(job, origin) == job_origin(job)
            assert stamped(envelopes[0], origin).correlation_id == request_id  # "" is none
            assert job_origin(jobs[0], origin).origin_request_id == request_id
            assert job_origin(jobs[0], origin).traceparent == origin.traceparent
            assert stamped(envelopes[3], origin) is envelopes[3] and job_origin(jobs[3], origin) is jobs[3]
