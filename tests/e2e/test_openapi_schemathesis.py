"""Schemathesis over the served OpenAPI document: every response the memory-profile app sends, over
real HTTP, must be one the document describes (status, media type, headers, body schema), and none
may be a 5xx. A case, a contact, an attachment, a foster home, a placement and a rule set exist
first and their ids are given to schemathesis, so it reaches past the 404s. Bounded: a few examples
per operation and mode, a fixed seed."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from craig.domain.access import Role
from tests.support.apps import auth, serving, token
from tests.support.files import png_bytes

pytestmark = pytest.mark.e2e

CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
)
MAX_EXAMPLES = 12
RUN_TIMEOUT_SECONDS = 600


async def _seed(client: httpx.AsyncClient, caller: dict[str, str], supervisor: dict[str, str]) -> dict[str, str]:
    """Resources to test against; their ids as schemathesis parameters."""

    async def created(path: str, headers: dict[str, str], **kwargs: Any) -> dict[str, Any]:
        response = await client.post(path, headers=headers, **kwargs)
        assert response.status_code in (201, 202), response.text
        body: dict[str, Any] = response.json()
        return body

    case = await created("/v1/cases", caller, json={"title": "Doe family"})
    contact = await created(
        f"/v1/cases/{case['id']}/contacts",
        caller,
        json={"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00+01:00", "summary": "Saw both."},
    )
    attachment = await created(
        f"/v1/cases/{case['id']}/contacts/{contact['id']}/attachments",
        caller,
        files={"file": ("photo.png", png_bytes(), "image/png")},
    )
    home = await created("/v1/foster-homes", supervisor, json={"name": "The Millers", "capacity": 3})
    placement = await created(
        "/v1/placements",
        caller,
        json={"case_id": case["id"], "status": "planned", "start_date": "2026-01-05", "foster_home_id": home["id"]},
    )
    rules = {"name": "triage", "rules": [{"when": {"fact": "age", "op": "lt", "value": 5}, "then": "high"}]}
    rule_set = await created("/v1/rule-sets", supervisor, json=rules)
    return {
        "case_id": case["id"],
        "contact_id": contact["id"],
        "attachment_id": attachment["id"],
        "home_id": home["id"],
        "placement_id": placement["id"],
        "name": rule_set["name"],
        "code": "not-found",
    }


def _config(parameters: dict[str, str]) -> str:
    lines = [f'"path.{name}" = "{value}"' for name, value in parameters.items()]
    return "[parameters]\n" + "\n".join(lines) + "\n"


async def _schemathesis(base: str, bearer: str, workdir: Path) -> tuple[int, str]:
    executable = Path(sys.executable).with_name("schemathesis")
    process = await asyncio.create_subprocess_exec(
        str(executable),
        "--config-file",
        str(workdir / "schemathesis.toml"),
        "run",
        f"{base}/api-doc/openapi.json",
        "--checks",
        ",".join(CHECKS),
        "--header",
        f"Authorization: Bearer {bearer}",
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        "20260101",
        "--workers",
        "1",
        "--request-timeout",
        "30",
        cwd=workdir,
        env={**os.environ, "NO_COLOR": "1", "SCHEMATHESIS_HOOKS": ""},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT_SECONDS)
    assert process.returncode is not None
    return process.returncode, output.decode(errors="replace")


@pytest.mark.parametrize("role", [Role.SUPERVISOR, Role.CASEWORKER])
async def test_every_response_is_documented(tmp_path: Path, role: Role) -> None:
    async with serving("memory", tmp_path / "data") as (container, client):
        bearer = token(container, role=role)
        caller = {"Authorization": f"Bearer {bearer}"}
        parameters = await _seed(client, caller, auth(container, role=Role.SUPERVISOR))
        (tmp_path / "schemathesis.toml").write_text(_config(parameters))
        code, output = await _schemathesis(str(client.base_url).rstrip("/"), bearer, tmp_path)
    assert code == 0, output[-20000:]
