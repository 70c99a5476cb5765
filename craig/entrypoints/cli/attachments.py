"""``craig attachments``: the attachments the scanner failed, and their removal."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import click

from craig.domain.constants import FAILED_LIST_DEFAULT_LIMIT, FAILED_LIST_MAX_LIMIT
from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.cli.common import ExitCode, Refused, echo, exit_codes, ids_option, limit_option, run
from craig.entrypoints.container import Container
from craig.entrypoints.runtime import running
from craig.ports.errors import PortError
from craig.usecases.attachments.failed_attachments import FailedAttachment


@click.group("attachments", short_help="Failed attachments: list and discard.")
def attachments_group() -> None:
    """Attachments the scanner failed: their stored object is not what the upload declared (another
    size), so neither the row nor the object can be trusted. They are kept, never served, and
    counted (craig_attachments_failed, `craig status`) until an operator discards them; the case
    worker then uploads the file again.
    """


@attachments_group.command("failed", epilog=exit_codes())
@limit_option(FAILED_LIST_DEFAULT_LIMIT, FAILED_LIST_MAX_LIMIT)
def failed(limit: int) -> int:
    """List failed attachments, oldest first: id, case, contact, size declared, object key.
    Reaches the database only."""
    container = bootstrap()

    async def main() -> int:
        async with running(container, parts=("database",)):
            found = await container.failed_attachments().failed(limit)
        _print(f"{len(found)} failed attachments", found)
        return ExitCode.OK

    return run(main())


@attachments_group.command(
    epilog=exit_codes(action_needed="an --id given was not discarded (named on stderr): not a failed attachment")
)
@ids_option("ATTACHMENT_ID", "A failed attachment's id, as `craig attachments failed` lists it", required=True)
def discard(ids: tuple[uuid.UUID, ...]) -> int:
    """Delete failed attachments for good: each one's object, then its row with its audit entry
    (attachment_discard) in one transaction. Only rows that are failed: a pending or present
    attachment is never touched. An object the store would not delete is left to the scanner's
    orphan sweep (after one such failure the store is not tried again). Each discarded
    attachment is printed on stdout as soon as its row is gone, then the count."""
    return run(discard_failed_attachments(bootstrap(), list(ids)))


async def discard_failed_attachments(container: Container, ids: Sequence[uuid.UUID]) -> int:
    """The command: discard, each attachment on stdout as soon as its row is gone; an id not
    discarded on stderr (exit 1). The object store is checked first, as it is, without creating
    its bucket: a mistyped bucket stops the command before anything is deleted."""
    async with running(container, parts=("database",)):
        try:
            await container.object_store().ping()
        except PortError as error:
            raise Refused(
                f"the object store cannot be used, so nothing was discarded: {error} (check CRAIG_OBJECT_STORE__*)"
            ) from error
        discarded: set[uuid.UUID] = set()
        async for done in container.failed_attachments().discard(ids):
            row = done.attachment.row
            discarded.add(row.id)
            if done.object_left is None:
                outcome = "object deleted"
            else:
                outcome = f"object left for the scanner's orphan sweep: {done.object_left}"
            echo(
                f"discarded {row.id}  table={done.attachment.table} contact={row.parent_id} "
                f"object={row.object_key} ({outcome})"
            )
    echo(f"{len(discarded)} discarded")
    missing = sorted(set(ids) - discarded, key=str)
    if missing:
        click.echo(f"craig: not discarded (no such failed attachment): {', '.join(map(str, missing))}", err=True)
        return ExitCode.ACTION_NEEDED
    return ExitCode.OK


def _print(heading: str, found: Sequence[FailedAttachment]) -> None:
    echo(heading)
    for item in found:
        row = item.row
        echo(
            f"{row.id}  table={item.table} case={row.case_id or '-'} contact={row.parent_id} declared_size={row.size} "
            f"created_at={row.created_at.isoformat()} object={row.object_key}"
        )
