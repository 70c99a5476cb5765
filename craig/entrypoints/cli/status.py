"""``craig status``: the backlogs, as a table or as JSON."""

from __future__ import annotations

import click

from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.cli.common import ExitCode, echo, exit_codes, run
from craig.entrypoints.runtime import running


@click.command(short_help="Backlogs and the age of their oldest item.", epilog=exit_codes())
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with stable keys instead of the table.")
def status(as_json: bool) -> int:
    """A summary for operators: idempotency slots, outbox, inbox and dead letters, unrouted
    events, attachments, foster homes, send jobs, each with the age of its oldest item.

    A section that cannot be read shows its error instead; the rest of the report still prints.
    The JSON keys are listed in the README (Operating Craig); ages are seconds there, null when
    there is nothing.
    """
    from craig.entrypoints.operations import collect_report, format_json, format_status

    container = bootstrap()

    async def main() -> int:
        async with running(container):
            report = await collect_report(container)
        echo(format_json(report) if as_json else format_status(report.table()))
        return ExitCode.OK

    return run(main())
