"""Where a send-job producer's CPU goes, step by step, against pgqueuer's ``enqueue``.

    .venv/bin/python -m bench.send_job_producer [--batches 2000] [--rounds 3]

``bench.send_jobs`` shows Craig's producers enqueuing fewer jobs a second than pgqueuer's. This
takes Craig's producer apart: each step below enqueues (or prepares) batches of 10 jobs,
``--batches`` times in a row on one connection with nothing else running, and the CPU it cost
is printed per job, this process's (Python, asyncpg and the system calls) and, on the embedded
server, the server's. The steps are cumulative, so the differences between rows are the cost
of what each adds:

* pgqueuer: ``Queries.enqueue`` of 10 no-op jobs with empty payloads, one statement;
* Craig, making the jobs: 10 ``SendJob`` objects, each with two new UUIDv7s (no database);
* ... and sealing them: what the repository does before its INSERT, each payload encrypted
  (AES-GCM) and the request's origin stamped (no database);
* ... and the INSERT: the repository's statement, in autocommit (``bench.send_jobs``'s
  one-statement producer);
* ... in a transaction: BEGIN, the INSERT, COMMIT, straight on the same asyncpg connection;
* ... through a unit of work: what Craig's own code runs (``bench.send_jobs``'s unit-of-work
  producer): a pooled connection, the statement through the session, BEGIN and COMMIT;
* one ``SELECT 1`` a batch: a bare round trip, for scale (printed, like the rest, per job: a
  tenth of one round trip).

Rounds alternate the steps so that drift on a shared machine hits all of them; medians.

``--instructions`` counts instead of timing, which does not move with the machine's load: each
step runs ``--small`` and then ``--large`` batches in a process of its own inside ``valgrind
--tool=callgrind``, and the difference between the two totals, divided by the difference in
jobs, is what a job costs the producer in instructions (its start, imports and connections
cancel out; the kernel's work for its system calls and the server's are not counted). Needs
valgrind (``apt-get install -y valgrind``); about 9 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench import send_jobs
from bench._services import BENCH_CIPHER, exit_cleanly_on_sigterm
from bench.send_jobs import _ADD_JOBS, _craig_enqueue, _craig_setup, _jobs, fresh_database, postgres_server
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.raw import DedicatedConnection
from craig.adapters.postgres.send_jobs import add_params

BATCH = 10

Step = Callable[[], Awaitable[None]]


async def _measure(step: Step, batches: int) -> tuple[float, float | None]:
    """CPU µs per job of ``batches`` runs of ``step``: this process's, the server's (or None)."""
    for _ in range(min(50, batches)):  # statements prepared, caches warm
        await step()
    meter = send_jobs.CpuMeter()
    for _ in range(batches):
        await step()
    return meter.per_job(batches * BATCH)


async def _craig_steps(url: str) -> tuple[dict[str, Step], Callable[[], Awaitable[None]]]:
    database = PostgresDatabase(url, pool_size=2, max_overflow=0)
    partners, tx = await _craig_setup(database)
    conn = DedicatedConnection(database)
    await conn.connect()
    raw = await conn._ensure()

    async def make() -> None:
        _jobs(partners, tx, BATCH)

    async def seal() -> None:
        add_params(_jobs(partners, tx, BATCH), BENCH_CIPHER)

    async def insert() -> None:
        await conn.fetch(_ADD_JOBS, add_params(_jobs(partners, tx, BATCH), BENCH_CIPHER))

    async def transaction() -> None:
        await raw.execute("BEGIN")
        await _ADD_JOBS.fetch(raw, add_params(_jobs(partners, tx, BATCH), BENCH_CIPHER))
        await raw.execute("COMMIT")

    async def unit_of_work() -> None:
        await _craig_enqueue(database, partners, tx, BATCH)

    async def round_trip() -> None:
        await raw.fetch("SELECT 1")

    async def close() -> None:
        await conn.aclose()
        await database.dispose()

    # In STEPS' order, after pgqueuer's; the round trip is one a batch: a tenth of one a job.
    made = (make, seal, insert, transaction, unit_of_work, round_trip)
    return dict(zip(STEPS[1:], made, strict=True)), close


async def _pgqueuer_step(url: str, *, install: bool = True) -> tuple[Step, Callable[[], Awaitable[None]]]:
    from pgqueuer.queries import Queries

    driver = await send_jobs._pgqueuer_connection(url)
    queries = Queries(driver)
    if install:
        await queries.install()

    async def enqueue() -> None:
        await queries.enqueue(["noop"] * BATCH, [b""] * BATCH, [0] * BATCH)

    async def close() -> None:
        await driver._connection.close()  # AsyncpgDriver keeps the asyncpg connection it was given

    return enqueue, close


async def _install_pgqueuer(url: str) -> None:
    _enqueue, close = await _pgqueuer_step(url)
    await close()


async def _one_round(craig_url: str, pgqueuer_url: str, batches: int) -> dict[str, tuple[float, float | None]]:
    steps, close_craig = await _craig_steps(craig_url)
    enqueue, close_pgqueuer = await _pgqueuer_step(pgqueuer_url)  # a fresh database each round
    try:
        results = {"pgqueuer: enqueue": await _measure(enqueue, batches)}
        for name, step in steps.items():
            results[name] = await _measure(step, batches)
        return results
    finally:
        await close_craig()
        await close_pgqueuer()


async def _run_step(name: str, craig_url: str, pgqueuer_url: str, batches: int) -> None:
    """The child valgrind runs: ``batches`` batches of the step ``name``, after a few to warm up."""
    steps, close_craig = await _craig_steps(craig_url)
    enqueue, close_pgqueuer = await _pgqueuer_step(pgqueuer_url, install=False)
    step = {"pgqueuer: enqueue": enqueue, **steps}[name]
    try:
        for _ in range(batches + 20):
            await step()
    finally:
        await close_craig()
        await close_pgqueuer()


def _instructions(name: str, craig_url: str, pgqueuer_url: str, batches: int, out_dir: Path) -> int:
    out = out_dir / f"{len(list(out_dir.iterdir()))}.callgrind"
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m", __spec__.name]
    command += ["--step", name, craig_url, pgqueuer_url, str(batches)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"the step {name!r} under valgrind failed:\n{done.stderr[-3000:]}")
    return int(found.group(1))


def count_instructions(small: int, large: int) -> None:
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is missing: apt-get install -y valgrind")
    out_dir = Path(tempfile.mkdtemp(prefix="craig-bench-callgrind-"))
    per_job: dict[str, float] = {}
    try:
        with (
            postgres_server() as server_url,
            fresh_database(server_url, migrated=True) as craig_url,
            fresh_database(server_url, migrated=False) as pgqueuer_url,
        ):
            asyncio.run(_install_pgqueuer(pgqueuer_url))  # the children find its tables
            for name in STEPS:
                totals = [_instructions(name, craig_url, pgqueuer_url, n, out_dir) for n in (small, large)]
                per_job[name] = (totals[1] - totals[0]) / ((large - small) * BATCH)
                print(f"  {name:<26} {per_job[name]:>10,.0f} instructions a job", flush=True)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    base = per_job["pgqueuer: enqueue"]
    print("\ninstructions a job (client process), and against pgqueuer's enqueue:")
    for name, count in per_job.items():
        print(f"  {name:<26} {count:>10,.0f}  {count / base:5.2f}x")


#: The steps, in the order they are measured and printed.
STEPS = (
    "pgqueuer: enqueue",
    "craig: making the jobs",
    "  + sealing them",
    "  + the INSERT",
    "  + BEGIN and COMMIT",
    "  + the unit of work",
    "SELECT 1 (a round trip)",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=2000, help="batches of 10 per step and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--instructions", action="store_true", help="count instructions under valgrind instead")
    parser.add_argument("--small", type=int, default=100, help="with --instructions: batches of the first run")
    parser.add_argument("--large", type=int, default=400, help="with --instructions: batches of the second run")
    child = ("NAME", "CRAIG_URL", "PGQUEUER_URL", "BATCHES")
    parser.add_argument("--step", nargs=4, metavar=child, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        name, craig_url, pgqueuer_url, batches = args.step
        asyncio.run(_run_step(name, craig_url, pgqueuer_url, int(batches)))
        return
    if args.instructions:
        if args.large <= args.small:
            sys.exit("--large must be more than --small")
        count_instructions(args.small, args.large)
        return
    client: dict[str, list[float]] = {}
    server: dict[str, list[float]] = {}
    with postgres_server() as server_url:
        for round_no in range(1, args.rounds + 1):
            with (
                fresh_database(server_url, migrated=True) as craig_url,
                fresh_database(server_url, migrated=False) as pgqueuer_url,
            ):
                results = asyncio.run(_one_round(craig_url, pgqueuer_url, args.batches))
            for name, (c, s) in results.items():
                client.setdefault(name, []).append(c)
                if s is not None:
                    server.setdefault(name, []).append(s)
                line = f"round {round_no}: {name:<26} client {c:6.1f} µs a job"
                print(line + (f", server {s:6.1f} µs" if s is not None else ""), flush=True)
    _report(client, server)


def _report(client: dict[str, list[float]], server: dict[str, list[float]]) -> None:
    base = statistics.median(client["pgqueuer: enqueue"])
    print("\nmedians, CPU µs a job (client / pgqueuer's enqueue client; server):")
    for name, values in client.items():
        c = statistics.median(values)
        s = f"{statistics.median(server[name]):6.1f}" if server.get(name) else "     -"
        print(f"  {name:<26} {c:6.1f}  {c / base:5.2f}x  {s}")


if __name__ == "__main__":
    exit_cleanly_on_sigterm()
    main()
