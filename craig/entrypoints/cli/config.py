"""``craig config``: the settings reference, or the values in force."""

from __future__ import annotations

import click

from craig.domain.constants import CONFIG_VALUE_MAX_WIDTH_CHARS, CONFIG_VALUE_MIN_WIDTH_CHARS
from craig.entrypoints.cli.common import ExitCode, echo, exit_codes
from craig.entrypoints.settings import effective, reference


@click.command(epilog=exit_codes())
@click.option(
    "--effective",
    "in_force",
    is_flag=True,
    help="Show the values in force and where each came from (default, environment, file); secrets as ****.",
)
def config(in_force: bool) -> int:
    """Print every setting with its default and meaning.

    With --effective, print the value each setting has here, from this environment, and its
    source: `default`, `environment`, or `file PATH` (a `<VARIABLE>_FILE`, or a development
    secret generated under the data dir). The settings are checked as at startup first.
    """
    if in_force:
        from craig.entrypoints.bootstrap import prepare

        rows = [(name, value, str(source)) for name, value, source in effective(prepare())]
        width = max(len(name) for name, _, _ in rows)
        value_width = max(
            CONFIG_VALUE_MIN_WIDTH_CHARS,
            *(len(repr(value)) for _, value, _ in rows if len(repr(value)) <= CONFIG_VALUE_MAX_WIDTH_CHARS),
        )
        for name, value, source in rows:
            echo(f"{name:<{width}}  {value!r:<{value_width}}  {source}")
        return ExitCode.OK
    width = max(len(name) for name, _, _ in reference())
    for name, default, help_text in reference():
        echo(f"{name:<{width}}  {default!r:<{CONFIG_VALUE_MIN_WIDTH_CHARS}}  {help_text}")
    return ExitCode.OK
