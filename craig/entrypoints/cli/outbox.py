"""``craig outbox``: the events whose publish keeps failing, and the end of their backoff."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import click

from craig.domain.constants import DLX_REPLAY_DEFAULT_LIMIT, FAILED_LIST_DEFAULT_LIMIT, FAILED_LIST_MAX_LIMIT
from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.cli.common import ExitCode, echo, exit_codes, ids_option, ids_or_all, limit_option, run
from craig.entrypoints.container import Container
from craig.entrypoints.runtime import running
from craig.ports.outbox import FailingEvent


@click.group("outbox", short_help="Failing outbox events: list, retry and discard.")
def outbox_group() -> None:
    """Events of the transactional outbox whose publish failed (the broker down, a nack, a
    timeout). Each is retried by the relays with a backoff of 1 s doubling to 5 min, and the
    younger events of its aggregate wait behind it, so that order per aggregate holds. `craig
    status` counts them (failing events); these commands show which they are, end their
    backoff, or discard one that can never go. They reach the database only.
    """


@outbox_group.command("failing", epilog=exit_codes())
@limit_option(FAILED_LIST_DEFAULT_LIMIT, FAILED_LIST_MAX_LIMIT)
def failing(limit: int) -> int:
    """List failing events, oldest staged first: id, type, aggregate, attempts, when the next
    attempt is due, how many events of its aggregate wait behind it, and the last error. The
    first line says how many there are in all when --limit shows fewer."""
    container = bootstrap()

    async def main() -> int:
        async with running(container, parts=("database",)):
            found = await container.failing_events().failing(limit)
        shown = len(found.events)
        echo(f"{shown} failing events" if shown == found.total else f"{shown} of {found.total} failing events")
        for event in found.events:
            _print_event("", event)
        return ExitCode.OK

    return run(main())


@outbox_group.command(
    epilog=exit_codes(
        action_needed="an --id given was not retried (named on stderr), or failing events still back off after "
        "--all (more than --limit)"
    )
)
@ids_option("EVENT_ID", "A failing event's id, as `craig outbox failing` lists it", required=False)
@click.option("--all", "every", is_flag=True, help="Every failing event (up to --limit), oldest first.")
@click.option(
    "--limit",
    type=click.IntRange(min=1, max=FAILED_LIST_MAX_LIMIT),
    default=None,
    metavar="N",
    help=f"With --all: at most this many (default {DLX_REPLAY_DEFAULT_LIMIT:,}).",
)
def retry(ids: tuple[uuid.UUID, ...], every: bool, limit: int | None) -> int:
    """End the backoff of failing events once the cause is fixed: each one backing off is due
    now, and the running relays are woken to publish it (and the events waiting behind it).
    Its attempts and last error stay. Give --id once or more, or --all. Recorded in the audit trail
    (outbox_retry, naming the events made due) in the same transaction. An event held at that
    moment (a relay publishing it, or another retry) is left alone. The retried events are
    listed on stdout, then the count; after --all, a count of failing events that still back
    off (beyond --limit, or held) goes to stderr."""
    chosen = ids_or_all(ids, every)  # a usage error before anything starts
    if chosen is not None and limit is not None:
        raise click.UsageError("--limit goes with --all; with --id, every id given is retried")
    return run(retry_failing_events(bootstrap(), chosen, limit or DLX_REPLAY_DEFAULT_LIMIT))


async def retry_failing_events(container: Container, ids: Sequence[uuid.UUID] | None, limit: int) -> int:
    async with running(container, parts=("database",)):
        report = await container.failing_events().retry(ids, limit)
    for event in report.retried:
        _print_event("retried ", event)
    echo(f"{len(report.retried)} retried")
    if ids is None:
        if report.backing_off:
            click.echo(
                f"craig: {report.backing_off} failing events still back off (more than --limit, or held by a relay "
                "right now): run `craig outbox retry --all` again",
                err=True,
            )
            return ExitCode.ACTION_NEEDED
        return ExitCode.OK
    return _name_the_others(
        ids,
        report.retried,
        "not retried (not a failing event backing off: due already, published, unknown, or held right now by a "
        "relay publishing it or another retry)",
    )


@outbox_group.command(
    epilog=exit_codes(action_needed="an --id given was not discarded (named on stderr)"),
)
@ids_option("EVENT_ID", "A failing event's id, as `craig outbox failing` lists it", required=True)
def discard(ids: tuple[uuid.UUID, ...]) -> int:
    """Discard failing events that can never be published (a stored envelope this version
    cannot read, an event the broker refuses for good), so that the events of their aggregate
    waiting behind them go on. The event is deleted: its consumers never receive it, so
    retry first when the cause can be fixed. Each event is named with --id (there is no --all).
    Recorded in the audit trail (outbox_discard, naming the events) in the same transaction.
    The discarded events are listed on stdout as they were, then the count; an id that is not a
    failing event (published, never failed, unknown) or that a relay is publishing right now is
    named on stderr."""
    return run(discard_failing_events(bootstrap(), ids))


async def discard_failing_events(container: Container, ids: Sequence[uuid.UUID]) -> int:
    async with running(container, parts=("database",)):
        discarded = await container.failing_events().discard(ids)
    for event in discarded:
        _print_event("discarded ", event)
    echo(f"{len(discarded)} discarded")
    return _name_the_others(
        ids,
        discarded,
        "not discarded (not a failing event: published, never failed, unknown, or held right now by a relay "
        "publishing it or a retry)",
    )


def _name_the_others(ids: Sequence[uuid.UUID], done: Sequence[FailingEvent], why: str) -> int:
    """Name on stderr the ids asked for that ``done`` does not hold (exit 1), else exit 0."""
    missing = sorted(set(ids) - {event.id for event in done}, key=str)
    if not missing:
        return ExitCode.OK
    click.echo(f"craig: {why}: " + ", ".join(map(str, missing)), err=True)
    return ExitCode.ACTION_NEEDED


def _print_event(lead: str, event: FailingEvent) -> None:
    echo(
        f"{lead}{event.id}  {event.event_type} aggregate={event.aggregate_type}:{event.aggregate_id} "
        f"attempts={event.attempts} next_attempt_at={event.next_attempt_at.isoformat()} "
        f"waiting_behind={event.waiting_behind} created_at={event.created_at.isoformat()}"
    )
    echo(f"    last_error: {event.last_error or '-'}")
