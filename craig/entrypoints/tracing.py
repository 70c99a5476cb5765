"""OpenTelemetry tracing, switched on by the standard ``OTEL_*`` variables when the
``craig[otel]`` extra is installed; otherwise nothing changes and nothing fails.

Tracing is on when ``OTEL_SDK_DISABLED`` is not ``true`` and either ``OTEL_TRACES_EXPORTER``
names an exporter (``otlp``, ``console``; ``none`` keeps it off) or an OTLP endpoint is set
(``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, then ``otlp`` is the
exporter). The OTLP exporter speaks HTTP/protobuf and reads its own variables (endpoint,
headers, timeout, compression); the sampler is ``OTEL_TRACES_SAMPLER`` (parent-based, always on
by default), the service ``OTEL_SERVICE_NAME`` (default ``craig``) with
``OTEL_RESOURCE_ATTRIBUTES``, the batching ``OTEL_BSP_*``. Which spans Craig makes, and how their
context crosses the broker and the partner call: :mod:`craig.adapters.telemetry`, docs/operations.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import structlog

from craig.adapters import telemetry

log = structlog.get_logger(__name__)


def _use_a_provider_installed_elsewhere() -> None:
    """A tracer provider someone else installed (``opentelemetry-instrument``) records Craig's
    spans too."""
    try:
        from opentelemetry import trace
    except ImportError:
        return
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        telemetry.record_spans()


_configured = False


def tracing_requested(environ: Mapping[str, str]) -> list[str]:
    """The exporters the ``OTEL_*`` variables ask for (none: tracing stays off)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    named = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if named:
        return [e.strip() for e in named.split(",") if e.strip() and e.strip() != "none"]
    if environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return ["otlp"]
    return []


def configure_tracing(environ: Mapping[str, str] | None = None) -> bool:
    """Install the SDK's tracer provider once per process when the variables ask for it;
    ``True`` when tracing is on. An unknown exporter, or the extra missing, is one warning."""
    global _configured
    env = os.environ if environ is None else environ
    exporters = tracing_requested(env)
    if not exporters or _configured:
        _use_a_provider_installed_elsewhere()
        return _configured
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError:
        log.warning("OTEL_* variables ask for traces but the craig[otel] extra is not installed; tracing is off")
        return False
    chosen: list[SpanExporter] = []
    for name in exporters:
        if name == "otlp":
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            except ImportError:
                log.warning("OTEL_TRACES_EXPORTER=otlp needs opentelemetry-exporter-otlp-proto-http (craig[otel])")
                continue
            chosen.append(OTLPSpanExporter())
        elif name == "console":
            chosen.append(ConsoleSpanExporter())
        else:
            log.warning("unknown OTEL_TRACES_EXPORTER; use otlp, console or none", exporter=name)
    if not chosen:
        return False
    attributes = {} if env.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: "craig"}
    provider = TracerProvider(resource=Resource.create(attributes))
    for exporter in chosen:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    telemetry.record_spans()
    _configured = True
    log.info("tracing on", exporters=exporters)
    return True
