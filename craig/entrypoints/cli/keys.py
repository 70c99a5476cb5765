"""``craig keys rotate``: re-encrypt every encrypted column under the newest field key.

Procedure (see README): put the new key first in ``CRAIG_FIELD_ENCRYPTION_KEY``
(``new:KEY,old:KEY``) on every instance and restart them; run this; retire the old key once it
reports nothing remaining. Progress goes to stderr, the summary to stdout.
"""

from __future__ import annotations

import sys
from typing import TextIO

import click

from craig.domain.constants import KEY_ROTATION_BATCH_SIZE, KEY_ROTATION_MAX_BATCH_SIZE
from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.cli.common import ExitCode, echo, exit_codes, run
from craig.entrypoints.cli.progress import ProgressBar
from craig.entrypoints.container import Container
from craig.entrypoints.runtime import StartupError, running
from craig.usecases.operations import ColumnReport


@click.group("keys", short_help="Field-encryption keys: rotate.")
def keys_group() -> None:
    """Field-encryption keys (CRAIG_FIELD_ENCRYPTION_KEY, `id:key,id:key`, newest first)."""


@keys_group.command(
    "rotate",
    epilog=exit_codes(
        ok="every value is under the newest key: the older keys may be removed",
        action_needed="values remain under an older key (an instance on the old ring, or undecryptable); run again",
        usage="usage error, or it cannot run (the memory profile, no key set, a dependency unreachable)",
    ),
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1, max=KEY_ROTATION_MAX_BATCH_SIZE),
    default=None,
    metavar="N",
    help=f"Rows per transaction (default {KEY_ROTATION_BATCH_SIZE}, at most {KEY_ROTATION_MAX_BATCH_SIZE}).",
)
def rotate_command(batch_size: int | None) -> int:
    """Re-encrypt every encrypted column under the newest key.

    First put the new key first in CRAIG_FIELD_ENCRYPTION_KEY on every instance and restart
    them; then run this with the same settings. Each batch is one short transaction; the
    application keeps working meanwhile, and the command is safe to interrupt and run again.
    Progress goes to stderr (a bar per column on a terminal, lines otherwise), the summary per
    column to stdout.
    """
    container = bootstrap()
    if batch_size is not None:
        container.rotate_keys.add_kwargs(batch_size=batch_size)
    return run(rotate(container))


def summary(reports: list[ColumnReport]) -> str:
    lines = []
    for report in reports:
        line = f"{report.column!s:<32} rewritten={report.rewritten} remaining={report.remaining}"
        if report.undecryptable:
            line += f" undecryptable={report.undecryptable}"
        lines.append(line)
    remaining = sum(r.remaining for r in reports)
    lines.append(
        "done: every value is under the newest key; older keys may be removed"
        if remaining == 0
        else f"{remaining} values are not under the newest key yet; see the lines above, then run again"
    )
    return "\n".join(lines)


async def rotate(container: Container, stderr: TextIO | None = None) -> int:
    """The command: 0 when everything is under the newest key, 1 when values remain."""
    stderr = stderr or sys.stderr
    if container.database_url() is None:
        profile = container.settings().profile
        raise StartupError(f"the {profile} profile keeps nothing on disk: there is nothing to rotate")
    encryptor = container.field_encryptor()
    if encryptor is None:
        raise StartupError("no field key is set (encryption_mode=optional): set CRAIG_FIELD_ENCRYPTION_KEY first")
    bar = ProgressBar(stderr)
    async with running(container, parts=("database",)):  # the columns are all it rewrites
        print(
            f"re-encrypting under key {encryptor.current_key_id!r} (ring: {', '.join(encryptor.key_ids)})",
            file=stderr,
        )
        try:
            reports = await container.rotate_keys()(lambda p: bar.update(str(p.column), p.done, p.total))
        finally:
            bar.close()
        # The family names' blind index is keyed by the newest key too: made again under it.
        reindexed = await container.reindex_family_names()()
    echo(summary(reports))
    echo(f"{'cases.family_name_index':<32} reindexed={reindexed.scanned} remaining={reindexed.remaining}")
    done = all(r.remaining == 0 for r in reports) and reindexed.remaining == 0
    return ExitCode.OK if done else ExitCode.ACTION_NEEDED
