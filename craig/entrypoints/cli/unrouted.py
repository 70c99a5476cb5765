"""``craig unrouted``: the events no subscription took, their replay and their removal."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

import click

from craig.domain.constants import DLX_LIST_DEFAULT_LIMIT, DLX_REPLAY_DEFAULT_LIMIT, UNROUTED_SCAN_MAX_EVENTS
from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.cli.common import ExitCode, echo, exit_codes, ids_option, ids_or_all, limit_option, run
from craig.entrypoints.container import Container
from craig.entrypoints.runtime import running
from craig.ports.messaging import UnroutedEvent


@click.group("unrouted", short_help="Unrouted events: list, replay and discard.")
def unrouted_group() -> None:
    """Events no subscription took when they were published: a type no consumer of the
    deployment takes (yet), or a consumer since removed. They are kept, never dropped (RabbitMQ:
    the queue craig.unrouted; the in-process bus: the inbox), counted by `craig status` and
    craig_unrouted_events, until an operator replays them (once a consumer takes their type) or
    discards them. Listing reaches the broker only (with the in-process bus, the database);
    replaying and discarding also the database, where they are recorded in the audit trail.
    """


@unrouted_group.command("list", epilog=exit_codes())
@limit_option(DLX_LIST_DEFAULT_LIMIT, UNROUTED_SCAN_MAX_EVENTS)
def list_(limit: int) -> int:
    """List unrouted events, oldest first, without removing them: id, type, and the consumers
    of this deployment that would take a replay of it."""
    container = bootstrap()

    async def main() -> int:
        async with running(container, parts=("broker",)):
            operations = container.unrouted_operations()
            events = await operations.peek(limit)
            echo(f"{len(events)} unrouted events")
            for event in events:
                takers = ", ".join(operations.consumers_of(event.event_type)) or "none"
                echo(f"{_line(event)} consumers={takers}")
        return ExitCode.OK

    return run(main())


@unrouted_group.command(
    epilog=exit_codes(action_needed="an event was not replayed (named on stderr, with why): it stays unrouted")
)
@ids_option("EVENT_ID", "An unrouted event's id", required=False)
@click.option("--all", "every", is_flag=True, help="Every unrouted event (up to --limit).")
@limit_option(DLX_REPLAY_DEFAULT_LIMIT, UNROUTED_SCAN_MAX_EVENTS)
def replay(ids: tuple[uuid.UUID, ...], every: bool, limit: int) -> int:
    """Publish unrouted events again, oldest first, to the consumers of this deployment that
    take their type (deploy the consumer first). Give --id once or more, or --all (--limit
    counts the replayed ones). Each leaves the unrouted events only once the broker confirmed
    its publish; one that no consumer takes stays, counted on stderr by reason. A replayed
    event reaches its consumer after newer events of its aggregate: order per aggregate does
    not hold for it. The replayed events are listed on stdout; stopped half way (Ctrl-C), those
    it published so far."""
    chosen = ids_or_all(ids, every)  # a usage error before anything starts
    return run(replay_unrouted(bootstrap(), chosen, limit))


async def replay_unrouted(container: Container, ids: Sequence[uuid.UUID] | None, limit: int) -> int:
    published: list[UnroutedEvent] = []
    try:
        async with running(container, parts=("database", "broker")):
            report = await container.unrouted_operations().replay(ids, limit, published.append)
    except (asyncio.CancelledError, KeyboardInterrupt):
        # Ctrl-C: what already reached the consumers, so that no one has to guess. An event
        # published just before the interruption may still be listed unrouted: replaying it
        # again is harmless (its consumers take an event once).
        echo(f"interrupted: {len(published)} published again before the interruption")
        for event in published:
            echo(_line(event))
        raise
    echo(f"{len(report.replayed)} replayed")
    for event in report.replayed:
        echo(_line(event))
    by_reason: dict[str, list[uuid.UUID]] = {}
    for kept in report.kept:
        by_reason.setdefault(kept.why, []).append(kept.event.event_id)
    for why, kept_ids in by_reason.items():  # one line per reason, not per event: there may be thousands
        named = f": {', '.join(map(str, kept_ids))}" if ids is not None else ""
        click.echo(f"craig: not replayed, {len(kept_ids)} event(s), {why}{named}", err=True)
    missing = sorted(set(ids or ()) - {e.event_id for e in report.replayed} - {k.event.event_id for k in report.kept})
    if missing:
        click.echo(f"craig: not replayed ({_NOT_FOUND}): {', '.join(map(str, missing))}", err=True)
    return ExitCode.ACTION_NEEDED if report.kept or missing else ExitCode.OK


#: Why an id given was not found among the unrouted events.
_NOT_FOUND = "no such unrouted event, or another craig unrouted run holds it right now"


@unrouted_group.command(
    epilog=exit_codes(action_needed="an --id given was not discarded (named on stderr): no such unrouted event")
)
@ids_option("EVENT_ID", "An unrouted event's id", required=True)
def discard(ids: tuple[uuid.UUID, ...]) -> int:
    """Remove unrouted events for good: ones no consumer will ever want (or that are not events
    Craig can read: their id shows as the nil UUID). Only by id; recorded in the audit trail
    first. The removed events are listed on stdout."""
    return run(discard_unrouted(bootstrap(), list(ids)))


async def discard_unrouted(container: Container, ids: Sequence[uuid.UUID]) -> int:
    async with running(container, parts=("database", "broker")):
        events = await container.unrouted_operations().discard(ids)
    echo(f"{len(events)} discarded")
    for event in events:
        echo(_line(event))
    missing = sorted(set(ids) - {e.event_id for e in events}, key=str)
    if missing:
        click.echo(f"craig: not discarded ({_NOT_FOUND}): {', '.join(map(str, missing))}", err=True)
        return ExitCode.ACTION_NEEDED
    return ExitCode.OK


def _line(event: UnroutedEvent) -> str:
    envelope = event.envelope
    if envelope is None:
        return f"{event.event_id}  {event.event_type}"
    return (
        f"{event.event_id}  {event.event_type:<40} source={envelope.source} "
        f"occurred_at={envelope.occurred_at.isoformat()} aggregate={envelope.aggregate_type}:{envelope.aggregate_id}"
    )
