"""Client CPU per drained send job, Craig against pgqueuer, counted in instructions by valgrind.

    .venv/bin/python -m bench.send_job_cpu [--small 500] [--large 1500] [--log-level INFO]

``bench.send_jobs`` measures jobs a second, and on a shared 2-core machine its figures move by a
fifth from one run to the next. This counts what a drain costs the consumer process instead,
which does not move: each system drains ``--small`` and then ``--large`` queued jobs with 5
consumers inside ``valgrind --tool=callgrind``, and the difference between the two runs'
instruction totals, divided by the difference in jobs, is the cost of one job (the interpreter's
start, the imports and the connections cancel out). PostgreSQL's own work is not counted: it runs
in its server processes.

The jobs are queued from outside valgrind beforehand, as ``bench.send_jobs`` queues them:
Craig's through a unit of work, spread over 4 partners at the highest rate a partner may have;
pgqueuer's with its ``enqueue``, an empty payload each. Craig's consumers are
``bench.send_jobs``'s (the full path with a no-op gateway, logging at ``--log-level`` to
standard error, which this sends to /dev/null), pgqueuer's ``PgQueuer.run`` with batch 10.

Takes about 4 minutes on 2 cores (valgrind runs a program some 50 times slower). Needs valgrind
(``apt-get install -y valgrind``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import send_jobs
from bench._services import exit_cleanly_on_sigterm
from craig.adapters.postgres.database import PostgresDatabase
from craig.usecases.exchange import SendPolicy

CONSUMERS = 5


async def _queue_craig(url: str, jobs: int) -> None:
    database = PostgresDatabase(url, pool_size=2, max_overflow=2)
    try:
        await send_jobs.craig_queue(database, jobs)
    finally:
        await database.dispose()


async def _drain_craig(url: str, jobs: int) -> None:
    database = PostgresDatabase(url, pool_size=2 * CONSUMERS + 2, max_overflow=10)
    try:
        await send_jobs.craig_drain_queued(database, jobs, CONSUMERS, SendPolicy())
    finally:
        await database.dispose()


async def _drain_pgqueuer(url: str, jobs: int) -> None:
    from pgqueuer.types import QueueExecutionMode

    done = [0]
    queuers = await send_jobs.pgqueuer_consumers(url, CONSUMERS, done)
    await asyncio.gather(*(pgq.run(batch_size=10, mode=QueueExecutionMode.drain) for pgq in queuers))
    if done[0] != jobs:
        raise RuntimeError(f"pgqueuer drained {done[0]} of {jobs} jobs")


def _drain_in_this_process(system: str, url: str, jobs: int, log_level: str) -> None:
    """The child valgrind runs: drain the queued jobs, nothing else."""
    if system == "craig":
        from craig.entrypoints.logging import configure_logging

        configure_logging(log_level)
        asyncio.run(_drain_craig(url, jobs))
    else:
        asyncio.run(_drain_pgqueuer(url, jobs))


def _instructions(system: str, url: str, jobs: int, log_level: str, out_dir: Path) -> int:
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out_dir / f'{system}.{jobs}.callgrind'}",
        sys.executable,
        "-m",
        "bench.send_job_cpu",
        "--drain",
        system,
        url,
        str(jobs),
        "--log-level",
        log_level,
    ]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ}, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"the {system} drain under valgrind failed:\n{done.stderr[-3000:]}")
    return int(found.group(1))


def per_job(system: str, server_url: str, small: int, large: int, log_level: str, out_dir: Path) -> float:
    queue = _queue_craig if system == "craig" else send_jobs.pgqueuer_queue
    totals = {}
    for jobs in (small, large):
        with send_jobs.fresh_database(server_url, migrated=system == "craig") as url:
            asyncio.run(queue(url, jobs))
            totals[jobs] = _instructions(system, url, jobs, log_level, out_dir)
        print(f"  {system:<9} {jobs:>6} jobs: {totals[jobs]:>15,} instructions", flush=True)
    return (totals[large] - totals[small]) / (large - small)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=500)
    parser.add_argument("--large", type=int, default=1500)
    parser.add_argument("--log-level", default="INFO", help="Craig's log level (default INFO, as `craig worker` logs)")
    parser.add_argument("--drain", nargs=3, metavar=("SYSTEM", "URL", "JOBS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.drain:
        system, url, jobs = args.drain
        _drain_in_this_process(system, url, int(jobs), args.log_level)
        return
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is missing: apt-get install -y valgrind")
    if args.large <= args.small:
        sys.exit("--large must be more than --small")
    out_dir = Path(tempfile.mkdtemp(prefix="craig-bench-callgrind-"))
    try:
        with send_jobs.postgres_server() as server_url:
            craig = per_job("craig", server_url, args.small, args.large, args.log_level, out_dir)
            pgqueuer = per_job("pgqueuer", server_url, args.small, args.large, args.log_level, out_dir)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    print("\ninstructions per drained job (client process):")
    print(f"  craig     {craig:>12,.0f}")
    print(f"  pgqueuer  {pgqueuer:>12,.0f}")
    print(f"  craig / pgqueuer: {craig / pgqueuer:.2f}x")


if __name__ == "__main__":
    exit_cleanly_on_sigterm()
    main()
