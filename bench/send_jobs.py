"""Send-job queue throughput against pgqueuer and procrastinate, side by side on one PostgreSQL.

    .venv/bin/python -m bench.send_jobs [--jobs 20000] [--workers 5] [--seconds 15] [--rounds 2]

Each system gets its own fresh database on the same server, the same number of consumers
(``--workers``) and a no-op job, modelled on pgqueuer's own ``tools/benchmark.py``:

* drain: enqueue ``--jobs`` jobs, then time how long the consumers take to finish them all;
* throughput: one producer enqueues batches of 10 while the consumers run for ``--seconds``;
  the rate is jobs completed per second. Craig's producer, like pgqueuer's ``enqueue``, inserts
  each batch with one statement (the repository's INSERT, in autocommit). ``craig throughput
  uow`` is the same run with the producer Craig's own code uses, a unit of work (BEGIN, INSERT,
  COMMIT): there the producer, not the worker, sets the rate;
* producer alone: each producer for ``--producer-seconds`` with no consumer, jobs enqueued a
  second: what the producers cost on their own, without the consumers sharing their event loop.

Craig's job is the real path with a no-op partner gateway: claim (``FOR UPDATE SKIP LOCKED`` +
lease), a slot from the shared PostgreSQL rate limiter, the no-op dispatch, then the outcome
and its ``exchange.sent`` outbox event committed. pgqueuer: ``PgQueuer.run`` with batch 10 per
consumer, one asyncpg connection each. procrastinate (drain only, ``--procrastinate-jobs``
jobs, as it is much slower): one worker with ``concurrency=--workers``.

Each drain of Craig's and pgqueuer's also prints the CPU time it cost per job: this process's
(the consumers, nothing else runs in it meanwhile) and, on the embedded server, the server's
processes' (read from ``/proc``).

Rounds alternate the systems so drift on a shared machine hits all of them; medians are printed
with Craig's ratio to each. Craig logs as ``craig worker`` does (``--log-level``, default INFO:
a line per job on stderr; send it elsewhere with ``2>/dev/null``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from bench._services import BENCH_CIPHER, _admin, exit_cleanly_on_sigterm, postgres_cpu_seconds
from craig.adapters.clock import SystemClock
from craig.adapters.postgres.database import PostgresDatabase, libpq_dsn
from craig.adapters.postgres.embedded import EmbeddedPostgres
from craig.adapters.postgres.migrations import upgrade_to_head
from craig.adapters.postgres.notify import PostgresListener
from craig.adapters.postgres.raw import DedicatedConnection, RawStatement
from craig.adapters.postgres.send_job_queue import PostgresSendJobQueue, listener_job_wake
from craig.adapters.postgres.send_jobs import ADD, add_params
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.adapters.send_job_queue import SEND_JOBS_CHANNEL
from craig.domain.constants import (
    PARTNER_RATE_LIMIT_MAX_RPM,
    SEND_MAX_CONCURRENCY,
    SEND_MAX_RATE_WAIT,
    SEND_POLL_INTERVAL,
)
from craig.domain.exchange import DispatchResult, PartnerAnswer, SendJob
from craig.domain.exchange_transactions import ExchangeTransaction
from craig.domain.partners import Partner, new_partner
from craig.entrypoints.logging import configure_logging
from craig.entrypoints.workers.send_job_scheduler import SendJobScheduler
from craig.ports.exchange import Delivery, Pace, PartnerGateway
from craig.usecases.exchange import SendPolicy
from craig.usecases.ids import new_id

Result = dict[str, float]


class NoopGateway(PartnerGateway):
    """Answers 200 at once, after waiting for its rate-limit slot like the real gateway."""

    async def send(self, partner: Partner, delivery: Delivery, pace: Pace) -> DispatchResult:
        await pace()
        return PartnerAnswer(200)

    async def get_json(self, partner: Partner, path: str, params: Mapping[str, str], pace: Pace) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


# --- Craig -------------------------------------------------------------------------------------


#: Jobs are spread over this many partners at the highest rate a partner may have (1,000,000 a
#: minute each): the shared rate limiter runs for every job but never paces the run. (One such
#: partner allows 16,667 jobs/s, which this machine reaches: nearly every job then waited for
#: its slot.)
PARTNERS = 4


async def _craig_setup(database: PostgresDatabase) -> tuple[list[Partner], ExchangeTransaction]:
    now = datetime.now(UTC)
    partners = [
        new_partner(
            id=new_id(),
            name=f"bench-{uuid.uuid4().hex[:6]}",
            base_url="http://127.0.0.1:9",
            token_url="http://127.0.0.1:9/token",
            client_id="bench",
            client_secret="bench",
            rate_limit_rpm=PARTNER_RATE_LIMIT_MAX_RPM,
            now=now,
        )
        for _ in range(PARTNERS)
    ]
    transaction = ExchangeTransaction(id=new_id(), payload={"bench": True}, created_by=uuid.uuid4(), created_at=now)
    uow = PostgresUnitOfWork(database, BENCH_CIPHER)
    async with uow:
        for partner in partners:
            await uow.partners.add(partner)
            # A partner's first reservation makes its rate-limit row: once per partner, not per run.
            await uow.partner_rate_limits.reserve(partner.id, PARTNER_RATE_LIMIT_MAX_RPM, 1, SEND_MAX_RATE_WAIT)
        await uow.exchange_transactions.add(transaction)
        await uow.commit()
    return partners, transaction


def _jobs(partners: list[Partner], tx: ExchangeTransaction, count: int) -> list[SendJob]:
    now = datetime.now(UTC)
    return [
        SendJob(
            id=new_id(),
            transaction_id=tx.id,
            partner_id=partners[n % len(partners)].id,
            correlation_id=new_id(),
            payload={"case": "c-1", "n": n},
            next_attempt_at=now,
            created_at=now,
        )
        for n in range(count)
    ]


async def _craig_enqueue(
    database: PostgresDatabase, partners: list[Partner], tx: ExchangeTransaction, count: int
) -> None:
    """Enqueue through the repository in a unit of work: BEGIN, INSERT, COMMIT."""
    uow = PostgresUnitOfWork(database, BENCH_CIPHER)
    async with uow:
        await uow.send_jobs.add_many(_jobs(partners, tx, count))
        await uow.commit()


_ADD_JOBS = RawStatement(ADD)


async def _craig_enqueue_one_statement(
    conn: DedicatedConnection, partners: list[Partner], tx: ExchangeTransaction
) -> None:
    """Enqueue 10 jobs with the repository's INSERT as one statement, as pgqueuer's enqueue does."""
    await conn.fetch(_ADD_JOBS, add_params(_jobs(partners, tx, 10), BENCH_CIPHER))


async def _craig_workers(
    database: PostgresDatabase,
    count: int,
    policy: SendPolicy,
    done: list[int],
    listener: PostgresListener | None = None,
) -> list[SendJobScheduler]:
    def observe(outcome: str, _seconds: float) -> None:
        if outcome == "sent":
            done[0] += 1

    queues = [PostgresSendJobQueue(database, BENCH_CIPHER, listener_job_wake(listener)) for _ in range(count)]
    # Open each worker's connection before the clock starts, as pgqueuer's are (statements are
    # still prepared on first use, inside the measurement, as pgqueuer's are).
    await asyncio.gather(*(q.connect() for q in queues))
    return [
        SendJobScheduler.build(
            lambda: PostgresUnitOfWork(database, BENCH_CIPHER),
            queue,
            NoopGateway(),
            SystemClock(),
            policy,
            observer=observe,
        )
        for queue in queues
    ]


async def craig_queue(database: PostgresDatabase, jobs: int) -> None:
    """Its partners and transaction, then ``jobs`` jobs queued in units of work of 5,000."""
    partners, tx = await _craig_setup(database)
    for start in range(0, jobs, 5000):
        await _craig_enqueue(database, partners, tx, min(5000, jobs - start))


async def craig_drain_queued(database: PostgresDatabase, jobs: int, workers: int, policy: SendPolicy) -> float:
    """Drain the ``jobs`` queued jobs with ``workers`` workers; jobs drained a second."""
    done = [0]
    consumers = await _craig_workers(database, workers, policy, done)
    rate = await _timed_drain(jobs, asyncio.gather(*(w.drain() for w in consumers)))
    await asyncio.gather(*(w.aclose() for w in consumers))
    if done[0] != jobs:
        raise RuntimeError(f"craig drained {done[0]} of {jobs} jobs")
    return rate


async def craig_drain(url: str, jobs: int, workers: int, policy: SendPolicy) -> float:
    database = PostgresDatabase(url, pool_size=2 * workers + 2, max_overflow=10)
    try:
        await craig_queue(database, jobs)
        return await craig_drain_queued(database, jobs, workers, policy)
    finally:
        await database.dispose()


async def craig_throughput(
    url: str, seconds: float, workers: int, policy: SendPolicy, *, uow_producer: bool = False
) -> float:
    database = PostgresDatabase(url, pool_size=2 * workers + 4, max_overflow=10)
    listener = PostgresListener(url, (SEND_JOBS_CHANNEL,))
    await listener.start()
    stop = asyncio.Event()
    try:
        partners, tx = await _craig_setup(database)
        done = [0]
        consumers = await _craig_workers(database, workers, policy, done, listener)

        async def consume(worker: SendJobScheduler) -> None:
            # As `craig worker` runs it: woken by NOTIFY on enqueue, polling every second.
            while not stop.is_set():
                if not await worker.run_once():
                    await worker.wait_for_jobs(SEND_POLL_INTERVAL)
            await worker.finish()
            await worker.aclose()

        producer = _craig_producer(database, partners, tx, stop, [0], uow_producer=uow_producer)
        return await _timed(seconds, stop, done, [*(consume(w) for w in consumers), producer])
    finally:
        await listener.stop()
        await database.dispose()


async def _craig_producer(
    database: PostgresDatabase,
    partners: list[Partner],
    tx: ExchangeTransaction,
    stop: asyncio.Event,
    produced: list[int],
    *,
    uow_producer: bool,
) -> None:
    """Enqueue batches of 10 until ``stop``, counting them in ``produced``."""
    conn = DedicatedConnection(database)
    try:
        while not stop.is_set():
            if uow_producer:
                await _craig_enqueue(database, partners, tx, 10)
            else:
                await _craig_enqueue_one_statement(conn, partners, tx)
            produced[0] += 10
    finally:
        await conn.aclose()


async def craig_produce_alone(url: str, seconds: float, *, uow_producer: bool) -> float:
    """The producer with no consumer: jobs enqueued a second."""
    database = PostgresDatabase(url, pool_size=4, max_overflow=2)
    try:
        partners, tx = await _craig_setup(database)
        stop, produced = asyncio.Event(), [0]
        producer = _craig_producer(database, partners, tx, stop, produced, uow_producer=uow_producer)
        return await _timed(seconds, stop, produced, [producer])
    finally:
        await database.dispose()


#: The postmaster of the embedded server this run started (none with ``CRAIG_BENCH_DATABASE_URL``).
_POSTMASTER: list[int] = []
#: The CPU time the last drain cost per job, in µs: this process's, and the server's processes'
#: (None when the server is not the embedded one).
LAST_DRAIN_CPU: list[tuple[float, float | None]] = []


def _server_cpu_seconds() -> float | None:
    """The embedded server's CPU time so far (None on another server)."""
    return postgres_cpu_seconds(_POSTMASTER[0]) if _POSTMASTER else None


class CpuMeter:
    """CPU time from its making: this process's, and the embedded server's (when the run has one)."""

    def __init__(self) -> None:
        self._server = _server_cpu_seconds()
        self._client = time.process_time()

    def per_job(self, jobs: int) -> tuple[float, float | None]:
        """µs a job so far: this process's, the server's (None on another server)."""
        client = time.process_time() - self._client
        after = _server_cpu_seconds()
        server = None if self._server is None or after is None else (after - self._server) / jobs * 1e6
        return client / jobs * 1e6, server


async def _timed_drain(jobs: int, drain: Awaitable[Any]) -> float:
    """Await ``drain``; jobs drained a second. Its CPU per job goes to :data:`LAST_DRAIN_CPU`."""
    meter = CpuMeter()
    started = time.perf_counter()
    await drain
    elapsed = time.perf_counter() - started
    LAST_DRAIN_CPU[:] = [meter.per_job(jobs)]
    return jobs / elapsed


async def _timed(seconds: float, stop: asyncio.Event, done: list[int], tasks: list[Awaitable[None]]) -> float:
    running = [asyncio.ensure_future(t) for t in tasks]
    await asyncio.sleep(seconds)
    counted = done[0]
    stop.set()
    await asyncio.gather(*running)
    return counted / seconds


# --- pgqueuer ----------------------------------------------------------------------------------


async def _pgqueuer_connection(url: str) -> Any:
    import asyncpg
    from pgqueuer.db import AsyncpgDriver

    return AsyncpgDriver(await asyncpg.connect(libpq_dsn(url)))


async def pgqueuer_queue(url: str, jobs: int) -> None:
    """pgqueuer's tables, then ``jobs`` no-op jobs with empty payloads, 5,000 an ``enqueue``."""
    from pgqueuer.queries import Queries

    admin = Queries(await _pgqueuer_connection(url))
    await admin.install()
    for start in range(0, jobs, 5000):
        size = min(5000, jobs - start)
        await admin.enqueue(["noop"] * size, [b""] * size, [0] * size)


async def pgqueuer_consumers(url: str, workers: int, done: list[int]) -> list[Any]:
    """``workers`` PgQueuers, one connection each, whose no-op job counts itself in ``done``."""
    from pgqueuer import PgQueuer
    from pgqueuer.models import Job

    queuers = [PgQueuer(await _pgqueuer_connection(url)) for _ in range(workers)]
    for pgq in queuers:

        @pgq.entrypoint("noop")
        async def noop(job: Job) -> None:
            done[0] += 1

    return queuers


async def pgqueuer_run(url: str, workers: int, *, jobs: int = 0, seconds: float = 0.0) -> float:
    from pgqueuer.queries import Queries
    from pgqueuer.types import QueueExecutionMode

    await pgqueuer_queue(url, jobs)  # none in throughput mode: the producer enqueues them
    done = [0]
    queuers = await pgqueuer_consumers(url, workers, done)
    mode = QueueExecutionMode.drain if jobs else QueueExecutionMode.continuous
    if jobs:
        rate = await _timed_drain(jobs, asyncio.gather(*(pgq.run(batch_size=10, mode=mode) for pgq in queuers)))
        if done[0] != jobs:
            raise RuntimeError(f"pgqueuer drained {done[0]} of {jobs} jobs")
        return rate
    stop = asyncio.Event()

    async def consume(pgq: Any) -> None:
        task = asyncio.ensure_future(pgq.run(batch_size=10, mode=mode))
        await stop.wait()
        pgq.shutdown.set()
        with suppress(Exception):
            await asyncio.wait_for(task, 10)

    producer = _pgqueuer_producer(Queries(await _pgqueuer_connection(url)), stop, [0])
    return await _timed(seconds, stop, done, [*(consume(q) for q in queuers), producer])


async def _pgqueuer_producer(queries: Any, stop: asyncio.Event, produced: list[int]) -> None:
    """``enqueue`` batches of 10 until ``stop``, counting them in ``produced``."""
    while not stop.is_set():
        await queries.enqueue(["noop"] * 10, [b""] * 10, [0] * 10)
        produced[0] += 10


async def pgqueuer_produce_alone(url: str, seconds: float) -> float:
    """pgqueuer's producer with no consumer: jobs enqueued a second."""
    from pgqueuer.queries import Queries

    driver = await _pgqueuer_connection(url)
    try:
        queries = Queries(driver)
        await queries.install()
        stop, produced = asyncio.Event(), [0]
        return await _timed(seconds, stop, produced, [_pgqueuer_producer(queries, stop, produced)])
    finally:
        await driver._connection.close()  # AsyncpgDriver keeps the asyncpg connection it was given


# --- procrastinate -----------------------------------------------------------------------------


async def procrastinate_drain(url: str, jobs: int, workers: int) -> float:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=libpq_dsn(url)))
    done = [0]

    @app.task(name="noop")
    async def noop() -> None:
        done[0] += 1

    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        for start in range(0, jobs, 1000):
            await noop.batch_defer_async(*([{}] * min(1000, jobs - start)))
        started = time.perf_counter()
        await app.run_worker_async(wait=False, concurrency=workers, install_signal_handlers=False)
        elapsed = time.perf_counter() - started
    if done[0] != jobs:
        raise RuntimeError(f"procrastinate drained {done[0]} of {jobs} jobs")
    return jobs / elapsed


# --- the run -----------------------------------------------------------------------------------


@contextmanager
def postgres_server() -> Iterator[str]:
    """``CRAIG_BENCH_DATABASE_URL``'s server, or one embedded PostgreSQL 18 for the whole run."""
    url = os.environ.get("CRAIG_BENCH_DATABASE_URL")
    if url:
        yield url
        return
    root = Path(tempfile.mkdtemp(prefix="craig-bench-pg-"))
    root.chmod(0o755)
    server = EmbeddedPostgres(root / "pg", fsync="off", synchronous_commit="off", max_connections="300")
    server.start()
    _POSTMASTER[:] = [int((root / "pg" / "postmaster.pid").read_text().split()[0])]
    try:
        yield server.url("postgres")
    finally:
        _POSTMASTER.clear()
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def fresh_database(server_url: str, *, migrated: bool) -> Iterator[str]:
    name = f"bench_{uuid.uuid4().hex[:10]}"
    _admin(server_url, f'CREATE DATABASE "{name}"')
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    try:
        if migrated:
            upgrade_to_head(url)
        yield url
    finally:
        _admin(server_url, f'DROP DATABASE "{name}" WITH (FORCE)')


def run(args: argparse.Namespace, server_url: str) -> dict[str, list[float]]:
    w = args.workers
    policy = SendPolicy(max_concurrency=args.concurrency, prefetch=args.prefetch)
    cases: dict[str, Callable[[str], Awaitable[float]]] = {
        "craig drain": lambda url: craig_drain(url, args.jobs, w, policy),
        "pgqueuer drain": lambda url: pgqueuer_run(url, w, jobs=args.jobs),
        "procrastinate drain": lambda url: procrastinate_drain(url, args.procrastinate_jobs, w),
        "craig throughput": lambda url: craig_throughput(url, args.seconds, w, policy),
        "pgqueuer throughput": lambda url: pgqueuer_run(url, w, seconds=args.seconds),
        "craig throughput uow": lambda url: craig_throughput(url, args.seconds, w, policy, uow_producer=True),
        "craig producer alone": lambda url: craig_produce_alone(url, args.producer_seconds, uow_producer=False),
        "craig uow producer alone": lambda url: craig_produce_alone(url, args.producer_seconds, uow_producer=True),
        "pgqueuer producer alone": lambda url: pgqueuer_produce_alone(url, args.producer_seconds),
    }
    results: dict[str, list[float]] = {name: [] for name in cases}
    for round_no in range(1, args.rounds + 1):
        for name, measure in cases.items():
            LAST_DRAIN_CPU.clear()
            with fresh_database(server_url, migrated=name.startswith("craig")) as url:
                rate = _loop_run(measure(url), args.uvloop)
            results[name].append(rate)
            cpu = ""
            if LAST_DRAIN_CPU:
                client, server = LAST_DRAIN_CPU[0]
                cpu = f"   CPU a job: client {client:4.0f} µs" + (f", server {server:4.0f} µs" if server else "")
            print(f"round {round_no}: {name:<24} {rate:9.0f} jobs/s{cpu}", flush=True)
    return results


def _loop_run(coroutine: Awaitable[float], use_uvloop: bool) -> float:
    if use_uvloop:
        import uvloop

        return uvloop.run(coroutine)  # type: ignore[arg-type]
    return asyncio.run(coroutine)  # type: ignore[arg-type]


def report(results: dict[str, list[float]]) -> None:
    median = {name: statistics.median(rates) for name, rates in results.items()}
    print("\nmedians (jobs/s):")
    for name, value in median.items():
        print(f"  {name:<24} {value:9.0f}")
    print("\nratios:")
    for mode, rival in (("drain", "pgqueuer"), ("drain", "procrastinate"), ("throughput", "pgqueuer")):
        ratio = median[f"craig {mode}"] / median[f"{rival} {mode}"]
        print(f"  craig / {rival} ({mode}): {ratio:.2f}x")
    ratio = median["craig throughput uow"] / median["pgqueuer throughput"]
    print(f"  craig with its unit-of-work producer / pgqueuer (throughput): {ratio:.2f}x")
    for name in ("craig producer alone", "craig uow producer alone"):
        ratio = median[name] / median["pgqueuer producer alone"]
        print(f"  {name} / pgqueuer producer alone (enqueued, no consumer): {ratio:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--procrastinate-jobs", type=int, default=5_000)
    parser.add_argument("--workers", type=int, default=5)
    parser.add_argument(
        "--concurrency", type=int, default=SEND_MAX_CONCURRENCY, help="Craig's dispatches at once per worker"
    )
    parser.add_argument(
        "--prefetch",
        type=int,
        default=SendPolicy().prefetch,
        help="jobs a Craig worker claims ahead of its free dispatch slots (CRAIG_EXCHANGE__PREFETCH)",
    )
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--producer-seconds", type=float, default=5.0, help="how long each producer runs alone, without consumers"
    )
    parser.add_argument("--uvloop", action="store_true", help="run every system on uvloop")
    parser.add_argument(
        "--log-level",
        default="INFO",
        help="Craig's log level (default INFO, as `craig worker` logs: one line per job, on stderr)",
    )
    args = parser.parse_args()
    configure_logging(args.log_level)  # Craig's log pipeline, as its worker runs it
    with postgres_server() as server_url:
        report(run(args, server_url))


if __name__ == "__main__":
    exit_cleanly_on_sigterm()
    main()
