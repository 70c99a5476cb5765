"""What idempotency costs, measured side by side in one run (PostgreSQL, real HTTP).

    .venv/bin/python -m bench.idempotency [--requests 2000] [--concurrency 16] [--rounds 3]

* an idempotent POST with a fresh key each time, against the same POST without a key;
* replays (same key and body again), against the same POST without a key;
* a storm: many concurrent duplicates of one slow request — the losers' latency relative to
  the winner's (they wait for it, woken by LISTEN/NOTIFY, then replay).

The API runs in its own process (uvicorn) with a route that stages one outbox event per request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import httpx

from bench._services import exit_cleanly_on_sigterm, postgres_database
from craig.domain.access import Role
from craig.entrypoints.tokens import mint
from tests.support.apps import JWT_SECRET, free_port


def _headers() -> dict[str, str]:
    from craig.entrypoints.settings import AuthSettings

    token = mint(
        AuthSettings(jwt_secret=JWT_SECRET), sub=uuid.uuid4(), role=Role.CASEWORKER, name="bench", ttl_seconds=3600
    )
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


async def _rate(client: httpx.AsyncClient, requests: int, concurrency: int, key: str | bool | None) -> float:
    """Requests per second. key: None = no header, True = a fresh key per request, str = that key."""
    gate = asyncio.Semaphore(concurrency)
    body = json.dumps({"a": 1})
    name = uuid.uuid4().hex

    async def one() -> None:
        headers = {}
        if key is True:
            headers["Idempotency-Key"] = uuid.uuid4().hex
        elif isinstance(key, str):
            headers["Idempotency-Key"] = key
        async with gate:
            response = await client.post(f"/v1/probe/{name}", content=body, headers=headers)
        assert response.status_code == 201, response.text

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(requests)))
    return requests / (time.perf_counter() - started)


async def _storm(client: httpx.AsyncClient, duplicates: int) -> tuple[float, float]:
    """(winner latency, median loser latency) for ``duplicates`` concurrent copies of a slow POST."""
    key, name = uuid.uuid4().hex, uuid.uuid4().hex
    body = json.dumps({"sleep": 0.2})

    async def one() -> tuple[float, bool]:
        started = time.perf_counter()
        response = await client.post(f"/v1/probe/{name}", content=body, headers={"Idempotency-Key": key})
        assert response.status_code == 201, response.text
        return time.perf_counter() - started, response.headers.get("idempotent-replayed") == "true"

    results = await asyncio.gather(*(one() for _ in range(duplicates)))
    winners = [latency for latency, replayed in results if not replayed]
    losers = [latency for latency, replayed in results if replayed]
    assert len(winners) == 1, f"{len(winners)} requests ran the handler"
    return winners[0], statistics.median(losers)


async def measure(base: str, requests: int, concurrency: int, rounds: int) -> None:
    # Shorter than uvicorn's keep-alive (5 s), so the client never reuses a connection being closed.
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200, keepalive_expiry=2.0)
    async with httpx.AsyncClient(base_url=base, headers=_headers(), limits=limits, timeout=60) as client:
        for _ in range(100):
            try:
                if (await client.get("/health/ready")).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
        await _rate(client, 200, concurrency, None)  # warm-up
        replay_key = uuid.uuid4().hex
        plain, fresh, replay, storms = [], [], [], []
        for round_ in range(rounds):
            plain.append(await _rate(client, requests, concurrency, None))
            fresh.append(await _rate(client, requests, concurrency, True))
            replay.append(await _rate(client, requests, concurrency, replay_key))
            storms.append(await _storm(client, 50))
            print(
                f"round {round_ + 1}: no key {plain[-1]:,.0f} req/s, fresh keys {fresh[-1]:,.0f} req/s, "
                f"replays {replay[-1]:,.0f} req/s, storm winner {storms[-1][0] * 1000:.0f} ms / "
                f"median loser {storms[-1][1] * 1000:.0f} ms"
            )
    p, f, r = (statistics.median(x) for x in (plain, fresh, replay))
    winner = statistics.median(s[0] for s in storms)
    loser = statistics.median(s[1] for s in storms)
    print(f"\n{requests} requests x {rounds} rounds, concurrency {concurrency}, PostgreSQL, real HTTP")
    print(f"POST without a key:          {p:,.0f} req/s")
    print(f"POST with a fresh key:       {f:,.0f} req/s   -> {f / p:.2f} x without a key")
    print(f"replay of a stored response: {r:,.0f} req/s   -> {r / p:.2f} x without a key")
    print(
        f"storm of 50 duplicates (handler 200 ms): winner {winner * 1000:.0f} ms, "
        f"median loser {loser * 1000:.0f} ms -> {loser / winner:.2f} x the winner"
    )


def main(requests: int, concurrency: int, rounds: int) -> None:
    with postgres_database() as url, tempfile.TemporaryDirectory(prefix="craig-bench-probe-") as data_dir:
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.support.probe_server", url, str(port)],
            env={**os.environ, "CRAIG_DATA_DIR": data_dir},
        )
        try:
            asyncio.run(measure(f"http://127.0.0.1:{port}", requests, concurrency, rounds))
        finally:
            server.terminate()
            server.wait(30)


if __name__ == "__main__":
    exit_cleanly_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    main(args.requests, args.concurrency, args.rounds)
