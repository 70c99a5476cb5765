"""Home lock mode: ``FOR NO KEY UPDATE`` (Craig) against ``FOR UPDATE`` (the plain row lock).

Activations into one home queue for its row lock, as they must. Meanwhile case workers create
*planned* placements in the same home. Each insert's foreign-key check takes ``FOR KEY SHARE`` on
the home. ``FOR UPDATE`` conflicts with that lock, so under it the planned inserts queue behind
every activation. ``FOR NO KEY UPDATE`` does not conflict with it.

Both modes run alternately in one process against one PostgreSQL, and the ratios are printed:

    .venv/bin/python -m bench.placement_home_lock [rounds]

``CRAIG_TEST_DATABASE_URL`` picks a server; otherwise an embedded PostgreSQL starts in a temp dir.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, date, datetime
from pathlib import Path

from sqlalchemy import text

from bench._services import BENCH_CIPHER, exit_cleanly_on_sigterm
from craig.adapters.clock import SystemClock
from craig.adapters.postgres import placements as adapter
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.migrations import upgrade_to_head
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.domain.access import Principal, Role
from craig.domain.cases import new_case
from craig.domain.placement_changes import NewPlacement
from craig.domain.placements import PlacementStatus
from craig.usecases.placements import CreateFosterHome, CreatePlacement
from tests.support.services import admin_sql, postgres_for_tests, quote_ident, with_database

ACTIVATIONS = 300
PLANNED = 300
CONCURRENCY = 16  # per kind
SUPERVISOR = Principal(uuid.uuid4(), "bench", Role.SUPERVISOR)
NO_KEY = adapter._LOCK_HOME
MODES = {
    "FOR NO KEY UPDATE": NO_KEY,
    "FOR UPDATE": text(str(NO_KEY).replace("FOR NO KEY UPDATE", "FOR UPDATE")),
}


async def _cases(db: PostgresDatabase, n: int) -> list[uuid.UUID]:
    now = datetime.now(UTC)
    cases = [
        new_case(id=uuid.uuid4(), title="b", family_name=None, opened_at=now, created_by=SUPERVISOR.sub, now=now)
        for _ in range(n)
    ]
    uow = PostgresUnitOfWork(db, BENCH_CIPHER)
    async with uow:
        for case in cases:
            await uow.cases.add(case)
        await uow.commit()
    return [case.id for case in cases]


async def _timed_pool(db: PostgresDatabase, commands: list[NewPlacement]) -> list[float]:
    """Run the commands with CONCURRENCY workers; the latency of each, in milliseconds."""
    queue = list(commands)
    latencies: list[float] = []

    async def worker() -> None:
        while queue:
            command = queue.pop()
            started = time.perf_counter()
            await CreatePlacement(PostgresUnitOfWork(db, BENCH_CIPHER), SystemClock())(SUPERVISOR, command)
            latencies.append((time.perf_counter() - started) * 1000)

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return latencies


async def one_round(db: PostgresDatabase, mode: str) -> tuple[float, float]:
    """Mean latency (ms) of planned inserts and of activations while both run together."""
    adapter._LOCK_HOME = MODES[mode]
    home = await CreateFosterHome(PostgresUnitOfWork(db, BENCH_CIPHER), SystemClock())(
        SUPERVISOR, name="bench", capacity=ACTIVATIONS
    )
    active_cases, planned_case = await _cases(db, ACTIVATIONS), (await _cases(db, 1))[0]
    start = date.today()
    activations = [
        NewPlacement(case_id=c, foster_home_id=home.id, status=PlacementStatus.ACTIVE, start_date=start)
        for c in active_cases
    ]
    planned = [
        NewPlacement(case_id=planned_case, foster_home_id=home.id, status=PlacementStatus.PLANNED, start_date=start)
        for _ in range(PLANNED)
    ]
    planned_ms, active_ms = await asyncio.gather(_timed_pool(db, planned), _timed_pool(db, activations))
    return statistics.mean(planned_ms), statistics.mean(active_ms)


async def main(url: str, rounds: int) -> None:
    db = PostgresDatabase(url, pool_size=2 * CONCURRENCY + 4, max_overflow=0)
    results: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
    try:
        await one_round(db, "FOR NO KEY UPDATE")  # warm-up
        for _ in range(rounds):
            for mode in MODES:
                results[mode].append(await one_round(db, mode))
    finally:
        adapter._LOCK_HOME = NO_KEY
        await db.dispose()
    planned = {mode: statistics.median(p for p, _ in rows) for mode, rows in results.items()}
    active = {mode: statistics.median(a for _, a in rows) for mode, rows in results.items()}
    print(f"{ACTIVATIONS} activations + {PLANNED} planned inserts into one home, {CONCURRENCY} workers each,")
    print(f"median of {rounds} alternating rounds (mean latency per operation):")
    for mode in MODES:
        print(f"  {mode:<18} planned {planned[mode]:7.2f} ms   activation {active[mode]:7.2f} ms")
    ratio = planned["FOR UPDATE"] / planned["FOR NO KEY UPDATE"]
    print(
        f"planned inserts are {ratio:.1f}x faster with FOR NO KEY UPDATE; activations ratio "
        f"{active['FOR UPDATE'] / active['FOR NO KEY UPDATE']:.2f}"
    )


def run() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with tempfile.TemporaryDirectory() as tmp:
        server_url, stop = postgres_for_tests(Path(tmp))
        name = f"bench_{uuid.uuid4().hex[:8]}"
        try:
            admin_sql(server_url, f"CREATE DATABASE {quote_ident(name)}")
            url = with_database(server_url, name)
            upgrade_to_head(url)
            asyncio.run(main(url, rounds))
        finally:
            admin_sql(server_url, f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)")
            stop()


if __name__ == "__main__":
    exit_cleanly_on_sigterm()
    run()
