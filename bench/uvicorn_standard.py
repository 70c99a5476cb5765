"""What ``uvicorn[standard]`` (uvloop and the httptools parser) changes, side by side in one run.

    .venv/bin/python -m bench.uvicorn_standard [--duration 8] [--rounds 3] [--connections 32]

The bare twin of ``bench.api`` (Litestar, asyncpg, PyJWT) answers an authenticated
``GET /v1/me`` once on uvicorn's pure-Python stack (the asyncio loop and
the h11 parser) and once on what ``craig serve`` runs (uvloop and httptools), alternating, one
process each, loaded by wrk.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench._api_server import (
    FIELD_KEY,
    JWT_SECRET,
    ROOT,
    _start,
    _wait_ready,
    free_port,
    lua_script,
    run_wrk,
    stop,
)
from bench._services import exit_cleanly_on_sigterm, postgres_database
from craig.adapters.postgres.database import libpq_dsn
from craig.domain.access import Role
from craig.entrypoints.settings import AuthSettings
from craig.entrypoints.tokens import mint

STACKS = {"asyncio + h11": ("asyncio", "h11"), "uvloop + httptools": ("uvloop", "httptools")}


@contextmanager
def bare(database_url: str, loop: str, http: str) -> Iterator[str]:
    port = free_port()
    env = {
        **{name: value for name, value in os.environ.items() if not name.startswith("CRAIG_")},
        "BARE_DATABASE_URL": libpq_dsn(database_url),
        "BARE_JWT_SECRET": JWT_SECRET,
        "BARE_FIELD_KEY": FIELD_KEY,
        "BARE_AUDITED": "",
        "PYTHONPATH": str(ROOT),
    }
    logs = Path(tempfile.mkdtemp(prefix="craig-bench-uvicorn-"))
    command = [sys.executable, "-m", "bench.bare_app", "--port", str(port), "--loop", loop, "--http", http]
    process = _start(command, env, logs / "bare.log")
    try:
        _wait_ready(f"http://127.0.0.1:{port}", [process], [logs / "bare.log"])
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)
        shutil.rmtree(logs, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    args = parser.parse_args()
    token = mint(
        AuthSettings(jwt_secret=JWT_SECRET), sub=uuid.uuid4(), role=Role.CASEWORKER, name="Ann", ttl_seconds=3600
    )
    script = lua_script("GET", headers={"Authorization": f"Bearer {token}"})
    rates: dict[str, list[float]] = {name: [] for name in STACKS}
    with postgres_database() as url:
        for round_ in range(args.rounds):
            for name, (loop, http) in STACKS.items():
                with bare(url, loop, http) as base:
                    result = run_wrk(
                        f"{base}/v1/me", connections=args.connections, duration=args.duration, script=script
                    )
                rate = result.requests_per_second
                rates[name].append(rate)
                print(f"round {round_ + 1}: {name:20} GET /v1/me {rate:8,.0f} req/s  p50 {result.p50_ms:.1f} ms")
    slow, fast = (statistics.median(rates[name]) for name in STACKS)
    print(f"\nGET /v1/me, {args.connections} connections, one process, medians of {args.rounds}:")
    print(f"asyncio + h11:      {slow:,.0f} req/s")
    print(f"uvloop + httptools: {fast:,.0f} req/s   -> {fast / slow:.2f} x")


if __name__ == "__main__":
    exit_cleanly_on_sigterm()
    main()
