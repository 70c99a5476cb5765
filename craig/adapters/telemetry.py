"""Where a piece of work came from, carried wherever the work goes: the request id and the
W3C trace context.

A request's id (``X-Request-ID``) is bound here by the HTTP middleware for the request's
duration (:func:`originating`); the event consumer binds the id an event carries, and the send
worker the id a send job carries, so their log lines, and what they stage in turn, carry it too.

**Why the adapters stamp it, at staging time.** Every event is written by an outbox writer and
every send job by the send-job repository, whichever use case staged it; they read the bound
id (and the current trace context) when they write. The use cases and the domain stay unaware
of requests, no use case can forget to pass the id along, and work started by a consumer or a
worker inherits the id of the event or job it handles without any code of its own. (Passing it
on the ``Principal`` would reach only what a request stages, and only where the use case copies
it.) An event's ``correlation_id`` is stamped only when the use case left it empty: an exchange
outcome event keeps its job's correlation id, the partner's dedupe key.

Tracing uses ``opentelemetry-api`` when it is installed (the ``craig[otel]`` extra) and does
nothing otherwise: :func:`span` then yields and records nothing, and :func:`current_traceparent`
is ``None``. Whether spans are recorded and exported is the SDK's business
(:mod:`craig.entrypoints.tracing`, switched on by the ``OTEL_*`` variables), which calls
:func:`record_spans` once it has installed a tracer provider. Until then a span costs nothing
unless it continues a context someone passed on (a caller's ``traceparent``), which is still
carried along to what the work stages.
"""

from __future__ import annotations

import contextlib
import enum
import re
from collections.abc import Iterator, Mapping
from contextvars import ContextVar, Token
from typing import Any, NamedTuple

import attrs
import structlog

from craig.domain.events import EventEnvelope
from craig.domain.exchange import SendJob

try:
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    _PROPAGATOR: TraceContextTextMapPropagator | None = TraceContextTextMapPropagator()
except ImportError:  # the craig[otel] extra is not installed
    _PROPAGATOR = None

TRACEPARENT = "traceparent"
TRACER_NAME = "craig"
#: What a carried request id may be (the HTTP layer's rule): anything else is not carried.
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")

_origin: ContextVar[str | None] = ContextVar("craig_origin_request_id", default=None)
#: A tracer provider that records spans is installed (see :func:`record_spans`).
_recording = False


def recording() -> bool:
    """Whether spans are recorded (a tracer provider is installed)."""
    return _recording


def record_spans() -> None:
    """Spans are recorded from now on: a tracer provider is installed (it cannot be removed)."""
    global _recording
    _recording = True


def origin_request_id() -> str | None:
    """The id of the request this work was started by, if any (see the module docstring)."""
    return _origin.get()


def sane_request_id(value: object) -> str | None:
    """``value`` when it is a request id worth carrying (bounded, safe characters), else ``None``."""
    return value if isinstance(value, str) and _SANE_REQUEST_ID.fullmatch(value) else None


def sane_traceparent(value: object) -> str | None:
    return value if isinstance(value, str) and _TRACEPARENT.fullmatch(value) else None


class originating:  # used as a function: ``with originating(request_id):``
    """Bind ``request_id`` for what runs inside: the ``request_id`` of every log line (see
    :func:`add_request_id`), the id stamped on what is staged. ``None`` (work no request
    started) binds nothing new. (A class rather than a generator: a send worker enters one per
    job, and this costs a third as much.)"""

    __slots__ = ("_request_id", "_token")

    def __init__(self, request_id: str | None) -> None:
        self._request_id = request_id
        self._token: Token[str | None] | None = None

    def __enter__(self) -> None:
        if self._request_id is not None:
            self._token = _origin.set(self._request_id)

    def __exit__(self, *_exc: object) -> None:
        if self._token is not None:
            _origin.reset(self._token)
            self._token = None


def add_request_id(_logger: Any, _method: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
    """A log processor: the bound request id as the line's ``request_id`` (unless it has one)."""
    request_id = _origin.get()
    if request_id is not None:
        event.setdefault("request_id", request_id)
    return event


def current_traceparent() -> str | None:
    """The W3C ``traceparent`` of the current span, ``None`` without a valid (sampled or not) one."""
    if _PROPAGATOR is None or not trace.get_current_span().get_span_context().is_valid:
        return None  # no trace: nothing to carry (and the propagator's work saved)
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get(TRACEPARENT)


class Origin(NamedTuple):
    """The bound request id and the current trace context, as :func:`current_origin` read them."""

    request_id: str | None
    traceparent: str | None


def current_origin() -> Origin:
    """What :func:`stamped` and :func:`job_origin` stamp. A writer of many rows reads it once and
    passes it to each: reading the trace context costs more than stamping a row."""
    return Origin(origin_request_id(), current_traceparent())


def _filled(own_id: Any, own_traceparent: str | None, origin: Origin | None) -> tuple[Any, str | None] | None:
    """A row's id and trace context with the origin's where its own are missing; None when
    nothing changes (the origin is read only when something is missing)."""
    if own_id and own_traceparent:
        return None
    origin = origin or current_origin()
    filled = (own_id or origin.request_id, own_traceparent or origin.traceparent)
    return None if filled == (own_id, own_traceparent) else filled


def stamped(envelope: EventEnvelope, origin: Origin | None = None) -> EventEnvelope:
    """``envelope`` with the bound request id as its ``correlation_id`` (unless it has one) and
    the current trace context (unless it has one): what an outbox writer stores. ``origin``:
    those, read once for many envelopes (:func:`current_origin`)."""
    filled = _filled(envelope.correlation_id, envelope.traceparent, origin)
    if filled is None:
        return envelope
    return attrs.evolve(envelope, correlation_id=filled[0], traceparent=filled[1])


def job_origin(job: SendJob, origin: Origin | None = None) -> SendJob:
    """A new send job with its ``origin_request_id`` and ``traceparent``: its own when set, else
    the bound request id and the current trace context (what the send-job repository stores).
    ``origin``: those, read once for many jobs (:func:`current_origin`)."""
    filled = _filled(job.origin_request_id, job.traceparent, origin)
    if filled is None:
        return job
    return attrs.evolve(job, origin_request_id=filled[0], traceparent=filled[1])


class SpanKind(enum.Enum):
    INTERNAL = "INTERNAL"
    SERVER = "SERVER"
    CLIENT = "CLIENT"
    PRODUCER = "PRODUCER"
    CONSUMER = "CONSUMER"


class Span:
    """The span :func:`span` opened: ``headers`` carry its context to the next process."""

    def __init__(self, otel_span: Any = None, *, inject: bool = True) -> None:
        self._span = otel_span
        self.headers: dict[str, str] = {}
        if otel_span is not None and inject and _PROPAGATOR is not None:
            _PROPAGATOR.inject(self.headers)

    def rename(self, name: str) -> None:
        if self._span is not None:
            self._span.update_name(name)

    def set(self, name: str, value: str | int | float | bool | None) -> None:
        if self._span is not None and value is not None:
            self._span.set_attribute(name, value)

    def failed(self, error: BaseException | str) -> None:
        """Mark the span as an error (a recorded exception, or a short reason)."""
        if self._span is None:
            return
        from opentelemetry.trace import Status, StatusCode

        if isinstance(error, BaseException):
            self._span.record_exception(error)
            self._span.set_status(Status(StatusCode.ERROR, type(error).__name__))
        else:
            self._span.set_status(Status(StatusCode.ERROR, error))

    def end(self) -> None:
        """End a span :func:`child_span` started (:func:`span` ends its own)."""
        if self._span is not None:
            self._span.end()
            self._span = None


class _NoSpan:
    """What :func:`span` gives when nothing records the span and no context is carried: a
    fresh :class:`Span` that does nothing, without a generator to run (a send worker opens a
    span per job)."""

    __slots__ = ()

    def __enter__(self) -> Span:
        return Span()

    def __exit__(self, *_exc: object) -> None:
        return None


_NO_SPAN = _NoSpan()


def span(
    name: str,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    parent: str | Mapping[str, Any] | None = None,
    attributes: Mapping[str, str | int | float | bool] | None = None,
    exception_is_error: bool = True,
) -> contextlib.AbstractContextManager[Span]:
    """A span around the block, current inside it (so what it calls is its child). ``parent``: a
    ``traceparent`` (or headers holding one) the span continues instead of the current span; an
    invalid or missing one falls back to the current span. An exception propagates and, unless
    ``exception_is_error`` is false (an HTTP server span, whose errors are its 5xx answers), ends
    the span as an error. Without ``opentelemetry-api`` this does nothing at all."""
    if _PROPAGATOR is None:
        return _NO_SPAN
    carried = sane_traceparent(parent if parent is None or isinstance(parent, str) else parent.get(TRACEPARENT))
    if carried is None and not _recording:
        # Nothing records it and no context is passed on: the current one (if any) stays.
        return _NO_SPAN
    return _span(name, kind, carried, attributes, exception_is_error)


@contextlib.contextmanager
def _span(
    name: str,
    kind: SpanKind,
    carried: str | None,
    attributes: Mapping[str, str | int | float | bool] | None,
    exception_is_error: bool,
) -> Iterator[Span]:
    assert _PROPAGATOR is not None  # span() checked
    context = None if carried is None else _PROPAGATOR.extract({TRACEPARENT: carried})
    tracer = trace.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(
        name,
        context=context,
        kind=getattr(trace.SpanKind, kind.value),
        attributes=dict(attributes or {}),
        record_exception=exception_is_error,
        set_status_on_exception=exception_is_error,
    ) as current:
        yield Span(current)


def _within_a_trace() -> bool:
    """Spans are recorded, and a trace is current."""
    return _recording and trace.get_current_span().get_span_context().is_valid


def child_span(name: str, *, attributes: Mapping[str, str | int | float | bool] | None = None) -> Span:
    """A span started now, child of the current one, NOT made current, ended by :meth:`Span.end`
    (a unit of work's transaction, which begins and ends in different calls). Only within a
    trace: a background loop's poll outside any request, event or job records nothing."""
    if not _within_a_trace():
        return Span()
    started = trace.get_tracer(TRACER_NAME).start_span(name, attributes=dict(attributes or {}))
    return Span(started, inject=False)


@contextlib.contextmanager
def child_span_around(name: str, *, attributes: Mapping[str, str | int | float | bool] | None = None) -> Iterator[Span]:
    """:func:`span` for a block, but only within a trace (as :func:`child_span`)."""
    if not _within_a_trace():
        yield Span()
        return
    with span(name, attributes=attributes) as current:
        yield current
