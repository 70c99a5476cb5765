"""A send-job worker in a process of its own, for the tests that kill one or run several.

    python -m tests.support.send_worker_process DATABASE_URL [--lease S] [--concurrency N]

It polls like the real worker loop, prints ``ready`` once its pool is up, and runs until
killed. Nothing in it is shared with the test process: the rate limit and the queue are
coordinated through PostgreSQL only.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import timedelta

from craig.adapters.clock import SystemClock
from craig.adapters.partners.http import HttpPartnerGateway
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.send_job_queue import PostgresSendJobQueue
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.domain.constants import SEND_POLL_INTERVAL
from craig.entrypoints.workers.send_job_scheduler import SendJobScheduler
from craig.usecases.exchange import SendPolicy
from tests.support.ciphers import TEST_CIPHER

FAST_BACKOFF = (timedelta(milliseconds=50),)


async def main(url: str, lease: float, concurrency: int) -> None:
    database = PostgresDatabase(url, pool_size=5, max_overflow=5)
    await database.ping()
    worker = SendJobScheduler.build(
        lambda: PostgresUnitOfWork(database, TEST_CIPHER),
        PostgresSendJobQueue(database, TEST_CIPHER),
        HttpPartnerGateway(connect_timeout_seconds=2, read_timeout_seconds=60, max_connections=20),
        SystemClock(),
        SendPolicy(
            lease=timedelta(seconds=lease),
            max_concurrency=concurrency,
            backoff=FAST_BACKOFF,
            recover_interval=timedelta(milliseconds=200),
        ),
    )
    print("ready", flush=True)
    while True:
        if not await worker.run_once():
            await asyncio.sleep(min(0.05, SEND_POLL_INTERVAL.total_seconds()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--lease", type=float, default=60.0)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    asyncio.run(main(args.url, args.lease, args.concurrency))
