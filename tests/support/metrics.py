"""Readings of the process's own metrics registry."""

from __future__ import annotations

from craig.entrypoints import metrics


def http_requests_counted(method: str, route: str, status: int) -> float:
    """``craig_http_requests_total`` of one method, route template and status (0 when none)."""
    labels = {"method": method, "route": route, "status": str(status)}
    return metrics.REGISTRY.get_sample_value("craig_http_requests_total", labels) or 0.0
