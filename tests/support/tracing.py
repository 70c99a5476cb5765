"""Spans recorded in memory: the SDK's tracer provider with an in-memory exporter, installed
once per test process (OpenTelemetry allows one global provider) and emptied for each test."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_exporter: InMemorySpanExporter | None = None


def memory_spans() -> InMemorySpanExporter:
    global _exporter
    if _exporter is None:
        _exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_exporter))
        trace.set_tracer_provider(provider)
    _exporter.clear()
    return _exporter


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
