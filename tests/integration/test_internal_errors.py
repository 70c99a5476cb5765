"""Errors that tell the truth: a statement the database refuses for good (a dropped column or
table) is a 500 with an incident id that the log line with the traceback carries too; never a
retryable 503, never a traceback in the body. (An outage is a 503:
``test_database_restart.py``.)"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
from litestar import get

from craig.domain.access import Role
from craig.entrypoints.logging import configure_logging
from tests.support.apps import auth, serving
from tests.support.problems import problem_code
from tests.support.services import admin_sql

pytestmark = pytest.mark.integration

INCIDENT = re.compile(r"[0-9a-f]{32}")


class JsonLog:
    """Craig's real log configuration (JSON lines on stderr), read back through ``capsys``."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self._capsys = capsys
        self._seen = ""

    def text(self) -> str:
        self._seen += self._capsys.readouterr().err
        return self._seen

    def lines(self) -> list[dict[str, Any]]:
        lines = []
        for line in self.text().splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
        return lines


@pytest.fixture
def json_log(capsys: pytest.CaptureFixture[str]) -> Iterator[JsonLog]:
    saved, root = structlog.get_config(), logging.getLogger()
    handlers, level = list(root.handlers), root.level
    configure_logging("INFO", json=True)
    try:
        yield JsonLog(capsys)
    finally:
        structlog.configure(**saved)
        root.handlers[:], root.level = handlers, level


def assert_incident(response: httpx.Response, log: JsonLog, cause: str) -> str:
    """A 500 ``internal-error`` problem with an incident id and nothing of the cause; the one
    log line with that id holds the traceback of ``cause``."""
    assert response.status_code == 500, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert "retry-after" not in response.headers
    body = response.json()
    assert problem_code(body) == "internal-error"
    incident = body["incident"]
    assert INCIDENT.fullmatch(incident) and incident in body["detail"]
    for leak in ("Traceback", cause, "SQLSTATE", "foster_homes", 'File "'):
        assert leak not in response.text
    logged = [line for line in log.lines() if line.get("incident") == incident]
    assert len(logged) == 1, log.text()
    assert logged[0]["level"] == "error"
    assert "Traceback" in logged[0]["exception"] and cause in logged[0]["exception"]
    return str(incident)


@pytest.mark.parametrize(
    ("sabotage", "cause"),
    [
        ("ALTER TABLE foster_homes DROP COLUMN name", "UndefinedColumnError"),
        ("ALTER TABLE foster_homes RENAME TO foster_homes_gone", "UndefinedTableError"),
    ],
)
async def test_a_statement_against_a_dropped_column_or_table_is_500_with_an_incident(
    pg_url: str, tmp_path: Path, json_log: JsonLog, sabotage: str, cause: str
) -> None:
    async with serving("postgres", tmp_path, pg_url) as (container, client):
        headers = auth(container, role=Role.SUPERVISOR)
        admin_sql(pg_url, sabotage)

        listed = await client.get("/v1/foster-homes", headers=headers)
        created = await client.post("/v1/foster-homes", json={"name": "Oak", "capacity": 2}, headers=headers)

        incidents = {assert_incident(listed, json_log, cause), assert_incident(created, json_log, cause)}
        assert len(incidents) == 2  # one incident per failed request


async def test_an_idempotent_request_that_failed_with_a_500_is_not_stored(
    pg_url: str, tmp_path: Path, json_log: JsonLog
) -> None:
    async with serving("postgres", tmp_path, pg_url) as (container, client):
        headers = {**auth(container, role=Role.SUPERVISOR), "Idempotency-Key": uuid.uuid4().hex}
        body = {"name": "Oak", "capacity": 2}
        admin_sql(pg_url, "ALTER TABLE foster_homes RENAME TO foster_homes_gone")
        failed = await client.post("/v1/foster-homes", json=body, headers=headers)
        assert_incident(failed, json_log, "UndefinedTableError")

        admin_sql(pg_url, "ALTER TABLE foster_homes_gone RENAME TO foster_homes")
        retried = await client.post("/v1/foster-homes", json=body, headers=headers)
        assert retried.status_code == 201, retried.text
        assert "idempotent-replayed" not in retried.headers
        replayed = await client.post("/v1/foster-homes", json=body, headers=headers)
        assert replayed.headers["idempotent-replayed"] == "true" and replayed.json() == retried.json()


@get("/test-only/explode")
async def explode() -> None:
    raise RuntimeError("secret internals: /srv/craig/config.py line 12")


async def test_an_unhandled_exception_is_500_with_an_incident(tmp_path: Path, json_log: JsonLog) -> None:
    async with serving("memory", tmp_path, extra_v1_routes=[explode]) as (container, client):
        response = await client.get("/v1/test-only/explode", headers=auth(container))
    assert_incident(response, json_log, "RuntimeError")
    assert "secret internals" not in response.text


async def test_a_head_that_fails_is_500_without_content_and_logged_as_head(tmp_path: Path, json_log: JsonLog) -> None:
    async with serving("memory", tmp_path, extra_v1_routes=[explode]) as (container, client):
        response = await client.head("/v1/test-only/explode", headers=auth(container))
    assert response.status_code == 500 and response.content == b""
    (logged,) = [line for line in json_log.lines() if line.get("incident")]
    assert logged["method"] == "HEAD" and "RuntimeError" in logged["exception"]
