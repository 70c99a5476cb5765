"""What operators see: the ``craig status`` report (table or JSON) and the database-backed
gauges of ``/metrics``, both read from the same backlogs."""

from craig.entrypoints.operations.gauges import metric_refreshers
from craig.entrypoints.operations.status import (
    StatusReport,
    collect_report,
    collect_status,
    format_json,
    format_status,
)

__all__ = ["StatusReport", "collect_report", "collect_status", "format_json", "format_status", "metric_refreshers"]
