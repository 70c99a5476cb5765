"""``craig status``: the backlogs, as a table or as JSON."""

from __future__ import annotations

import click

from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.cli.common import ExitCode, echo, exit_codes, run
from craig.entrypoints.runtime import running, start_what_answers


@click.command(
    short_help="Backlogs and the age of their oldest item.",
    epilog=exit_codes(
        ok="the report is whole: every dependency up, every section read",
        action_needed="a dependency is down or a section could not be read (the report still prints; "
        "one line on stderr names them)",
    ),
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with stable keys instead of the table.")
def status(as_json: bool) -> int:
    """A summary for operators: idempotency slots, outbox, inbox and dead letters, unrouted
    events, attachments, foster homes, send jobs, each with the age of its oldest item.

    Only the database must be reachable: the report says which of the other dependencies
    (the broker, the object store) is down, and a section that cannot be read without one shows
    its error instead; the rest of the report still prints, and the command exits 1.
    The JSON keys are listed in the README (Operating Craig); ages are seconds there, null when
    there is nothing.
    """
    from craig.entrypoints.operations import collect_report, format_json, format_status

    container = bootstrap()

    async def main() -> int:
        async with running(container, parts=("database",)):
            await start_what_answers(container, ("object_store", "broker"))  # the report says which is down
            report = await collect_report(container)
        echo(format_json(report) if as_json else format_status(report.table()))
        problems = report.problems()
        if problems:
            click.echo(f"craig: the report is not whole: {', '.join(problems)}", err=True)
            return ExitCode.ACTION_NEEDED
        return ExitCode.OK

    return run(main())
