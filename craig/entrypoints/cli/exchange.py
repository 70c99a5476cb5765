"""``craig exchange``: the send jobs that failed for good, and their retry."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import click

from craig.domain.constants import FAILED_LIST_DEFAULT_LIMIT, FAILED_LIST_MAX_LIMIT
from craig.domain.exchange import SendJob
from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.cli.common import ExitCode, echo, exit_codes, ids_option, limit_option, run
from craig.entrypoints.container import Container
from craig.entrypoints.runtime import running


@click.group("exchange", short_help="Failed send jobs: list and retry.")
def exchange_group() -> None:
    """Send jobs that failed for good: their last attempt failed, a partner answered what no retry
    can help, or the partner cannot be used. Each stays failed (counted by `craig status` and
    craig_exchange_send_jobs{status="failed"}) until it is retried, here or by a supervisor over HTTP.
    """


@exchange_group.command("failed", epilog=exit_codes())
@limit_option(FAILED_LIST_DEFAULT_LIMIT, FAILED_LIST_MAX_LIMIT)
def failed(limit: int) -> int:
    """List failed send jobs, the most recently failed first, with their last error. Reaches the
    database only."""
    container = bootstrap()

    async def main() -> int:
        async with running(container, parts=("database",)):
            jobs = await container.failed_send_jobs().failed(limit)
        _print(f"{len(jobs)} failed send jobs", jobs)
        return ExitCode.OK

    return run(main())


@exchange_group.command(
    epilog=exit_codes(action_needed="an --id given was not retried (named on stderr): not a failed send job")
)
@ids_option("JOB_ID", "A failed send job's id, as `craig exchange failed` lists it", required=True)
def retry(ids: tuple[uuid.UUID, ...]) -> int:
    """Put failed send jobs back in the queue once the cause is fixed: due now, with a fresh
    attempt budget, each recorded in the audit trail (job_retry) in the same transaction. Only
    jobs that are failed: a pending, in-flight or sent job is never touched. A running worker
    sends them within its poll interval. Each retried job is printed on stdout as soon as its
    retry commits, then the count."""
    return run(retry_failed_send_jobs(bootstrap(), list(ids)))


async def retry_failed_send_jobs(container: Container, ids: Sequence[uuid.UUID]) -> int:
    """The command: retry, each job on stdout as soon as its retry commits; an id not retried on
    stderr (exit 1)."""
    retried: set[uuid.UUID] = set()
    async with running(container, parts=("database",)):
        async for job in container.failed_send_jobs().retry(ids):
            retried.add(job.id)
            _print_job("retried ", job)
    echo(f"{len(retried)} retried")
    missing = sorted(set(ids) - retried, key=str)
    if missing:
        click.echo(f"craig: not retried (no such failed send job): {', '.join(map(str, missing))}", err=True)
        return ExitCode.ACTION_NEEDED
    return ExitCode.OK


def _print(heading: str, jobs: Sequence[SendJob]) -> None:
    echo(heading)
    for job in jobs:
        _print_job("", job)


def _print_job(lead: str, job: SendJob) -> None:
    failed_at = job.completed_at.isoformat() if job.completed_at else "-"
    echo(
        f"{lead}{job.id}  status={job.status} partner={job.partner_id} transaction={job.transaction_id} "
        f"attempts={job.attempts} failed_at={failed_at}\n    last_error: {job.last_error or '-'}"
    )
