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


@click.group("outbox", short_help="Failing outbox events: list and retry.")
def outbox_group() -> None:
    """Events of the transactional outbox whose publish failed (the broker down, a nack, a
    timeout). Each is retried by the relays with a backoff of 1 s doubling to 5 min, and the
    younger events of its aggregate wait behind it, so that order per aggregate holds. `craig
    status` counts them (failing events); these commands show which they are and end their
    backoff. They reach the database only.
    """


@outbox_group.command("failing", epilog=exit_codes())
@limit_option(FAILED_LIST_DEFAULT_LIMIT, FAILED_LIST_MAX_LIMIT)
def failing(limit: int) -> int:
    """List failing events, oldest staged first: id, type, aggregate, attempts, when the next
    attempt is due, how many events of its aggregate wait behind it, and the last error."""
    container = bootstrap()

    async def main() -> int:
        async with running(container, parts=("database",)):
            events = await container.failing_events().failing(limit)
        echo(f"{len(events)} failing events")
        for event in events:
            _print_event("", event)
        return ExitCode.OK

    return run(main())


@outbox_group.command(
    epilog=exit_codes(action_needed="an --id given was not retried (named on stderr): not a failing event")
)
@ids_option("EVENT_ID", "A failing event's id, as `craig outbox failing` lists it", required=False)
@click.option("--all", "every", is_flag=True, help="Every failing event (up to --limit), oldest first.")
@limit_option(DLX_REPLAY_DEFAULT_LIMIT, FAILED_LIST_MAX_LIMIT)
def retry(ids: tuple[uuid.UUID, ...], every: bool, limit: int) -> int:
    """End the backoff of failing events once the cause is fixed: each is due now, and a running
    relay publishes it (and the events waiting behind it) within its poll interval. Its
    attempts and last error stay. Give --id once or more, or --all. Recorded in the audit trail
    (outbox_retry) in the same transaction. An event a relay is publishing at that moment is
    left to it. The retried events are listed on stdout, then the count."""
    chosen = ids_or_all(ids, every)  # a usage error before anything starts
    return run(retry_failing_events(bootstrap(), chosen, limit))


async def retry_failing_events(container: Container, ids: Sequence[uuid.UUID] | None, limit: int) -> int:
    async with running(container, parts=("database",)):
        events = await container.failing_events().retry(ids, limit)
    for event in events:
        _print_event("retried ", event)
    echo(f"{len(events)} retried")
    missing = sorted(set(ids or ()) - {event.id for event in events}, key=str)
    if missing:
        click.echo(
            "craig: not retried (no such failing event, or it is held right now: a relay publishing it, "
            "or another retry): " + ", ".join(map(str, missing)),
            err=True,
        )
        return ExitCode.ACTION_NEEDED
    return ExitCode.OK


def _print_event(lead: str, event: FailingEvent) -> None:
    echo(
        f"{lead}{event.id}  {event.event_type} aggregate={event.aggregate_type}:{event.aggregate_id} "
        f"attempts={event.attempts} next_attempt_at={event.next_attempt_at.isoformat()} "
        f"waiting_behind={event.waiting_behind} created_at={event.created_at.isoformat()}"
    )
    echo(f"    last_error: {event.last_error or '-'}")
