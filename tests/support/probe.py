"""A probe route for the idempotency layer: it counts its executions and has a real effect
(an outbox event staged in the request's unit of work)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from datetime import UTC, datetime
from typing import Annotated, Any

from litestar import Response, post
from litestar.params import FromPath, HeaderParameter, JSONBody

from craig.domain.events import EventEnvelope
from craig.entrypoints.http.dependencies import Me, UoW

EXECUTIONS: Counter[str] = Counter()


def probe_event(name: str) -> EventEnvelope:
    return EventEnvelope(
        id=uuid.uuid4(),
        source="craig-tests",
        type="tests.probed",
        occurred_at=datetime.now(UTC),
        payload={"name": name},
        aggregate_type="probe",
        aggregate_id=name,
    )


@post("/probe/{name:str}", status_code=201)
async def probe(
    name: FromPath[str],
    data: JSONBody[dict[str, Any]],
    uow: UoW,
    principal: Me,
    probe_sleep: Annotated[float, HeaderParameter(name="x-probe-sleep")] = 0.0,
) -> Response[dict[str, Any]]:
    """Sleeps ``data.sleep`` or the ``X-Probe-Sleep`` header (not part of the fingerprint)."""
    EXECUTIONS[name] += 1
    async with uow:
        await uow.outbox.stage(probe_event(name))
        await uow.commit()
    await asyncio.sleep(float(data.get("sleep", 0)) or probe_sleep)
    if data.get("fail"):
        raise RuntimeError("probe asked to fail")
    if data.get("status"):
        headers = {"Retry-After": str(data["retry_after"])} if data.get("retry_after") else {}
        return Response({"name": name, "status": data["status"]}, status_code=int(data["status"]), headers=headers)
    body = {"name": name, "run": EXECUTIONS[name], "by": principal.name, "pad": "x" * int(data.get("pad", 0))}
    return Response(body, status_code=201, headers={"Location": f"/v1/probe/{name}", "ETag": f'"{name}"'})


@post("/probe-required/{name:str}", status_code=201, opt={"idempotency": "required"})
async def probe_required(name: FromPath[str], data: JSONBody[dict[str, Any]]) -> dict[str, str]:
    return {"name": name}


ROUTES = [probe, probe_required]
