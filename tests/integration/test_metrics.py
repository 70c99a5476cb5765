"""``/metrics`` as Prometheus sees it: every request counted once with the status actually sent
(a 401 of the bearer middleware, a 404 and a 405 of the router), bounded route labels, the
build info and process collectors, ``/metrics`` moved off the public API by a setting, and a
scrape that reads no history table whole (each statement under EXPLAIN on populated tables)."""

from __future__ import annotations

from pathlib import Path

import attrs
import httpx
import pytest

from craig.domain.constants import STATS_EXACT_COUNT_MAX_ROWS
from craig.entrypoints import metrics
from craig.entrypoints.http.app import create_app
from craig.entrypoints.operations import metric_refreshers
from craig.entrypoints.runtime import running
from craig.entrypoints.settings import HttpSettings
from tests.integration.test_operator_counts import HISTORY, HISTORY_TABLES, fill
from tests.support import apps
from tests.support.apps import live_server, make_container, make_settings, serving
from tests.support.metrics import http_requests_counted
from tests.support.plans import capturing_statements, explain_captured, plan_nodes, rows_examined
from tests.support.tracing import memory_spans

pytestmark = pytest.mark.integration


def durations(method: str, route: str) -> float:
    value = metrics.REGISTRY.get_sample_value(
        "craig_http_request_duration_seconds_count", {"method": method, "route": route}
    )
    return value or 0.0


async def test_each_request_is_counted_once_with_the_status_it_got(tmp_path: Path) -> None:
    before = {
        "401": http_requests_counted("GET", "/v1/cases", 401),
        "404": http_requests_counted("GET", metrics.UNMATCHED_ROUTE, 404),
        "405": http_requests_counted("DELETE", metrics.UNMATCHED_ROUTE, 405),
        "500": http_requests_counted("GET", "/v1/cases", 500),
        "200": http_requests_counted("GET", "/v1/cases/{case_id}", 200),
        "durations": durations("GET", "/v1/cases"),
    }
    async with serving("memory", tmp_path) as (container, client):
        assert (await client.get("/v1/cases")).status_code == 401  # raised in the bearer middleware
        assert (await client.get("/no/such/path/12345")).status_code == 404
        assert (await client.get("/no/such/path/67890")).status_code == 404
        assert (await client.delete("/health/live")).status_code == 405
        headers = apps.auth(container)
        opened = await client.post("/v1/cases", json={"title": "t"}, headers=headers)
        assert opened.status_code == 201, opened.text
        shown = await client.get(f"/v1/cases/{opened.json()['id']}", headers=headers)
        assert shown.status_code == 200, shown.text
        scrape = await client.get("/metrics")
        scraped = scrape.text
    assert scrape.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"  # one charset
    assert http_requests_counted("GET", "/v1/cases", 401) == before["401"] + 1
    assert (
        http_requests_counted("GET", metrics.UNMATCHED_ROUTE, 404) == before["404"] + 2
    )  # one label for every unknown path
    assert http_requests_counted("DELETE", metrics.UNMATCHED_ROUTE, 405) == before["405"] + 1
    assert http_requests_counted("GET", "/v1/cases", 500) == before["500"]  # the 401 is not counted as a 500
    assert http_requests_counted("GET", "/v1/cases/{case_id}", 200) == before["200"] + 1  # the template, not the id
    assert durations("GET", "/v1/cases") == before["durations"] + 1
    for name in (
        "craig_http_requests_total",
        "craig_http_request_duration_seconds",
        "craig_outbox_batch_duration_seconds",
        "craig_exchange_dispatch_duration_seconds",
        "craig_worker_loop_pass_duration_seconds",
        "craig_outbox_pending",
        "craig_referrals_unscreened",
    ):
        assert f"# TYPE {name} " in scraped, name
    assert "craig_http_request_seconds" not in scraped
    assert f'craig_build_info{{version="{metrics._version()}"}} 1.0' in scraped
    assert "process_cpu_seconds_total" in scraped and "python_info{" in scraped


async def test_a_method_of_nobody_s_adds_no_label(tmp_path: Path) -> None:
    """uvicorn's default parser (httptools) refuses most invented methods itself; h11
    (``--http h11``) and other ASGI servers hand any token to the app. Each would have been a
    label of its own: a client sending random methods would grow every scrape without bound."""
    before = http_requests_counted(metrics.OTHER_METHOD, metrics.UNMATCHED_ROUTE, 405)
    app = create_app(make_container(make_settings("memory", tmp_path)), manage_runtime=False)
    transport = httpx.ASGITransport(app=app)  # no HTTP parser between the client and the app
    sampled = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}  # forces a span
    with memory_spans() as spans:
        async with httpx.AsyncClient(transport=transport, base_url="http://craig") as client:
            for invented in ("BREW", "X-7F3A9C"):
                assert (await client.request(invented, "/health/live", headers=sampled)).status_code == 405
        finished = spans.get_finished_spans()
    assert http_requests_counted(metrics.OTHER_METHOD, metrics.UNMATCHED_ROUTE, 405) == before + 2
    assert http_requests_counted("BREW", metrics.UNMATCHED_ROUTE, 405) == 0
    # Nor a span name: OpenTelemetry's HTTP and _OTHER, the original kept aside.
    servers = [s for s in finished if (s.attributes or {}).get("http.request.method_original")]
    assert sorted((s.name, (s.attributes or {})["http.request.method"]) for s in servers) == [("HTTP", "_OTHER")] * 2
    assert sorted((s.attributes or {})["http.request.method_original"] for s in servers) == ["BREW", "X-7F3A9C"]


async def test_the_api_does_not_export_the_workers_readiness(tmp_path: Path) -> None:
    """craig_worker_ready belongs to `craig worker`: an API exporting a constant 0 would fire the
    "worker not ready" alert forever and hide an absent worker."""
    async with serving("memory", tmp_path) as (_container, client):
        text = (await client.get("/metrics")).text
    assert "craig_worker_ready" not in text and "craig_http_requests_total" in text


async def test_a_metrics_port_takes_metrics_off_the_public_api(tmp_path: Path) -> None:
    settings = make_settings("memory", tmp_path, http=HttpSettings(metrics_port=9))
    container = make_container(settings)
    async with live_server(create_app(container)) as base, httpx.AsyncClient(base_url=base) as client:
        assert (await client.get("/metrics")).status_code == 404
        assert (await client.get("/health/live")).status_code == 200


async def test_a_scrape_reads_no_history_table_whole(pg_url: str, tmp_path: Path) -> None:
    """Every statement of one scrape, run again under EXPLAIN ANALYZE on tables with a long
    history: no Seq Scan of a history table, and no scan reading more than a capped count."""
    container = apps.make_container(apps.make_settings("postgres", tmp_path, pg_url))
    async with running(container):
        database = container.postgres()
        await fill(database)
        with capturing_statements() as statements:
            await metrics.render(metric_refreshers(container))
        scans: list[tuple[str, str, int, str]] = []
        for statement, arguments in statements:
            if statement.lstrip().upper().startswith("EXPLAIN"):  # a planner estimate: reads no row
                continue
            if not any(table in statement for table in HISTORY_TABLES):
                continue
            plan = await explain_captured(database, statement, arguments)
            sql = " ".join(statement.split())
            for node in plan_nodes(plan):
                if node.get("Relation Name") in HISTORY_TABLES:
                    rows = rows_examined({**node, "Plans": []}, HISTORY_TABLES)
                    scans.append((node["Relation Name"], node["Node Type"], rows, sql))
    print("\n".join(f"{table:24} {kind:18} {rows:8} {sql[:140]}" for table, kind, rows, sql in scans))
    scanned = {table for table, _, _, _ in scans}
    # What the scrape's gauges read: send jobs, idempotency slots, the outbox, the in-process
    # dead letters (the inbox), pending attachments, the intake queue.
    assert {
        "exchange_send_jobs",
        "idempotency_responses",
        "event_outbox",
        "event_inbox",
        "contact_attachments",
        "referrals",
    } <= scanned
    assert [scan for scan in scans if scan[1] == "Seq Scan"] == []
    # A history count stops at its cap (above it, the planner's estimate): never the history.
    assert [scan for scan in scans if scan[2] > STATS_EXACT_COUNT_MAX_ROWS] == []
    assert STATS_EXACT_COUNT_MAX_ROWS < HISTORY / 2


def test_the_settings_refuse_a_metrics_port_equal_to_the_api_port(tmp_path: Path) -> None:
    from craig.entrypoints.settings import SettingsError, validate

    settings = attrs.evolve(make_settings("memory", tmp_path), http=HttpSettings(port=8000, metrics_port=8000))
    with pytest.raises(SettingsError, match="CRAIG_HTTP__METRICS_PORT must differ"):
        validate(settings)
