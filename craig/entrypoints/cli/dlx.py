"""``craig dlx``: the events whose handling failed for good, and their replay."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Sequence
from typing import TextIO

import click

from craig.domain.constants import DLX_LIST_DEFAULT_LIMIT, DLX_REPLAY_DEFAULT_LIMIT
from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.cli.common import ExitCode, echo, exit_codes, ids_option, ids_or_all, limit_option, run
from craig.entrypoints.cli.progress import ProgressBar
from craig.entrypoints.container import Container
from craig.entrypoints.runtime import running
from craig.ports.messaging import DeadLetterInfo


@click.group(short_help="Dead-lettered events: list, replay and discard.")
def dlx() -> None:
    """Dead-lettered events: deliveries that failed every retry, or could never succeed.

    Each is kept with its consumer, queue, retry count and last error until an operator replays
    it (after fixing the cause) or discards it (when it can never succeed: its queue is gone);
    `craig status` and the gauge craig_dlx_messages count them. Listing reaches the broker only
    (with the in-process bus, that is the database); replaying and discarding also the database,
    where they are recorded in the audit trail.
    """


@dlx.command("list", epilog=exit_codes())
@limit_option(DLX_LIST_DEFAULT_LIMIT)
def list_(limit: int) -> int:
    """List dead letters, oldest first, without removing them."""
    container = bootstrap()

    async def main() -> int:
        async with running(container, parts=("broker",)):
            letters = await container.dead_letter_operations().peek(limit)
        _print(f"{len(letters)} dead letters", letters)
        return ExitCode.OK

    return run(main())


@dlx.command(
    epilog=exit_codes(action_needed="an --id given was not replayed (named on stderr): not a dead letter, or kept")
)
@ids_option("EVENT_ID", "A dead letter's event id", required=False)
@click.option("--all", "every", is_flag=True, help="Every dead letter (up to --limit).")
@limit_option(DLX_REPLAY_DEFAULT_LIMIT)
def replay(ids: tuple[uuid.UUID, ...], every: bool, limit: int) -> int:
    """Send dead letters back to their queue, in their original order, each with a fresh retry
    budget. Give --id once or more, or --all.

    Progress goes to stderr (a bar on a terminal, lines otherwise); the replayed letters are
    listed on stdout. Safe to interrupt: a letter is removed only once it is back in its queue.
    """
    chosen = ids_or_all(ids, every)  # a usage error before anything starts
    return run(replay_dead_letters(bootstrap(), chosen, limit))


async def replay_dead_letters(
    container: Container, ids: Sequence[uuid.UUID] | None, limit: int, stderr: TextIO | None = None
) -> int:
    """The command: replay, with progress on ``stderr``; the replayed letters on stdout."""
    bar = ProgressBar(stderr or sys.stderr)
    try:
        async with running(container, parts=("database", "broker")):
            letters = await container.dead_letter_operations().replay(
                ids, limit, lambda done, total: bar.update("dead letters replayed", done, total)
            )
    finally:
        bar.close()
    _print(f"{len(letters)} replayed", letters)
    missing = sorted(set(ids) - {letter.event_id for letter in letters}, key=str) if ids is not None else []
    if missing:
        # Not in the dead-letter queue (a wrong id, replayed already), or kept there (see the
        # warnings above: its queue is gone): an operator must look, so not a clean exit.
        click.echo(f"craig: not replayed: {', '.join(map(str, missing))}", err=True)
        return ExitCode.ACTION_NEEDED
    return ExitCode.OK


@dlx.command(
    epilog=exit_codes(
        action_needed="an --id given was not discarded (named on stderr): none, or several share it (--queue)"
    )
)
@ids_option("EVENT_ID", "A dead letter's event id", required=True)
@click.option(
    "--queue",
    default=None,
    metavar="QUEUE",
    help="Only the letters of this queue (as `craig dlx list` shows it): for an id several letters share.",
)
def discard(ids: tuple[uuid.UUID, ...], queue: str | None) -> int:
    """Remove dead letters for good: those that can never succeed (their queue is gone, e.g. a
    stopped instance's broadcast queue, or the event is not one Craig can read). Only by id;
    recorded in the audit trail first. An id that several letters share (one event failed in
    several consumers) is removed only with --queue naming one. The removed letters are listed
    on stdout."""
    return run(discard_dead_letters(bootstrap(), list(ids), queue))


async def discard_dead_letters(container: Container, ids: Sequence[uuid.UUID], queue: str | None = None) -> int:
    """The command: discard, the removed letters on stdout; an id not removed on stderr (exit 1)."""
    async with running(container, parts=("database", "broker")):
        letters = await container.dead_letter_operations().discard(ids, queue)
    _print(f"{len(letters)} discarded", letters)
    missing = sorted(set(ids) - {letter.event_id for letter in letters}, key=str)
    if missing:
        click.echo(
            f"craig: not discarded (no such dead letter, or several share the id: name one with --queue): "
            f"{', '.join(map(str, missing))}",
            err=True,
        )
        return ExitCode.ACTION_NEEDED
    return ExitCode.OK


def _print(heading: str, letters: Sequence[DeadLetterInfo]) -> None:
    echo(heading)
    for letter in letters:
        first = letter.first_failed_at.isoformat() if letter.first_failed_at else "-"
        echo(
            f"{letter.event_id}  {letter.event_type:<40} queue={letter.queue} retries={letter.retry_count} "
            f"first_failed_at={first}\n    last_error: {letter.last_error}"
        )
