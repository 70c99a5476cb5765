"""Spans recorded in memory: the SDK's tracer provider with an in-memory exporter, installed
once per test process (OpenTelemetry allows one global provider). It keeps spans only inside
:func:`memory_spans`, so later tests in the same process do not pile them up."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from craig.adapters import telemetry


class _Recorder(InMemorySpanExporter):
    armed = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return super().export(spans) if self.armed else SpanExportResult.SUCCESS


_recorder: _Recorder | None = None


@contextmanager
def memory_spans() -> Iterator[InMemorySpanExporter]:
    """The spans that end inside the block (none from before it)."""
    global _recorder
    if _recorder is None:
        _recorder = _Recorder()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_recorder))
        trace.set_tracer_provider(provider)
        telemetry.record_spans()
    _recorder.clear()
    _recorder.armed = True
    try:
        yield _recorder
    finally:
        _recorder.armed = False


def named(spans: Iterable[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def ancestors(span: ReadableSpan, spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    """``span``'s parent, its parent's parent, ... as far as recorded spans go."""
    by_id = {s.context.span_id: s for s in spans}
    chain: list[ReadableSpan] = []
    current = by_id.get(parent_id(span) or -1)
    while current is not None:
        chain.append(current)
        current = by_id.get(parent_id(current) or -1)
    return chain
