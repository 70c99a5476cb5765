"""``craig audit``: verify the audit trail's hash chain, and print its head.

``verify`` recomputes every hash from the first kept link; it reads the tables and trusts no
trigger, so it catches what was done with the triggers switched off. Progress goes to stderr
(a bar on a terminal, lines otherwise), the findings to stdout.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

import click

from craig.domain.audit_chain import ExpectedHead
from craig.domain.constants import AUDIT_UNSEALED_ALERT
from craig.domain.errors import InvalidInput
from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.cli.common import ExitCode, echo, exit_codes, run
from craig.entrypoints.cli.progress import ProgressBar
from craig.entrypoints.container import Container
from craig.entrypoints.runtime import running
from craig.usecases.audit.verify_chain import ChainReport

PROGRESS_LABEL = "audit chain verified"


@click.group("audit", short_help="The audit trail: verify its hash chain, print its head.")
def audit_group() -> None:
    """The audit trail: every read, change and refusal, sealed into a SHA-256 hash chain.

    Keep the head (`craig audit head`) somewhere the database's administrators cannot write,
    and check the chain against it now and then (`craig audit verify --expect-head`).
    """


def _expected_head(_: click.Context, __: click.Parameter, value: str | None) -> ExpectedHead | None:
    if value is None:
        return None
    try:
        return ExpectedHead.parse(value)
    except InvalidInput as error:
        raise click.BadParameter(error.detail) from error


@audit_group.command(
    "verify",
    epilog=exit_codes(
        ok="the chain is intact from its first kept link (and passes through --expect-head)",
        action_needed="the first entry changed, removed or inserted out of order is named on stdout; "
        "or the chain misses the expected head; or entries stayed unsealed too long",
    ),
)
@click.option(
    "--expect-head",
    metavar="HASH",
    callback=_expected_head,
    help="A head kept elsewhere (`craig audit head`): 64 hex digits, or SEQ:HASH (`craig audit head "
    "--with-seq`). The chain must still pass through it; a chain rewritten from some entry on fails.",
)
def verify_command(expect_head: ExpectedHead | None) -> int:
    """Recompute every hash of the audit chain and name the first entry that was changed,
    removed or inserted out of order, even if the database's protections were switched off
    to do it. Safe to run at any time: it only reads."""
    return run(verify(bootstrap(), expect_head))


@audit_group.command(
    "head", epilog=exit_codes(ok="the head was printed", action_needed="nothing is sealed yet: nothing printed")
)
@click.option("--with-seq", is_flag=True, help="Print SEQ:HASH (what --expect-head takes) instead of the hash.")
@click.option("--json", "as_json", is_flag=True, help='Print {"seq": N, "hash": "<hex>"} instead.')
def head_command(with_seq: bool, as_json: bool) -> int:
    """Print the hash of the newest sealed entry (hex): the value to keep elsewhere."""
    return run(show_head(bootstrap(), with_seq=with_seq, as_json=as_json))


async def show_head(container: Container, *, with_seq: bool = False, as_json: bool = False) -> int:
    """The command: the head on stdout (0), or one line on stderr when nothing is sealed (1)."""
    async with running(container, parts=("database",)):  # the chain is all it reads
        head = await container.audit.head()()
    if head is None:
        click.echo("craig: nothing is sealed yet", err=True)
        return ExitCode.ACTION_NEEDED
    if as_json:
        echo(json.dumps({"seq": head.seq, "hash": head.hash.hex()}))
    else:
        echo(f"{head.seq}:{head.hash.hex()}" if with_seq else head.hash.hex())
    return ExitCode.OK


async def verify(container: Container, expect_head: ExpectedHead | None = None, stderr: TextIO | None = None) -> int:
    """The command: 0 when the chain is intact, 1 when not (the findings on stdout)."""
    bar = ProgressBar(stderr or sys.stderr)
    async with running(container, parts=("database",)):  # the chain is all it reads
        try:
            report = await container.audit.verify()(
                expect_head, lambda done, total: bar.update(PROGRESS_LABEL, done, total)
            )
        finally:
            bar.close()
    echo(summary(report, expect_head))
    return ExitCode.OK if report.intact else ExitCode.ACTION_NEEDED


def summary(report: ChainReport, expect_head: ExpectedHead | None) -> str:
    first = report.start.first_seq
    lines = []
    if report.broken is not None:
        lines.append(f"BROKEN {report.broken}")
        lines.append(f"checked {report.checked} links from seq {first} before the break")
    else:
        if report.head is None:
            lines.append("intact: the chain is empty")
        else:
            lines.append(f"intact: {report.checked} links, seq {first} to {report.head.seq}")
            lines.append(f"head {report.head.seq}:{report.head.hash.hex()}")
        if expect_head is not None:
            lines.append("the chain passes through the expected head")
    if first > 1:
        lines.append(f"entries before seq {first} were purged; the chain is anchored at {report.start.anchor.hex()}")
    pending = report.pending
    if pending.count:
        line = f"{pending.count} entries are not sealed yet (oldest written {pending.oldest_at:%Y-%m-%d %H:%M:%S %Z})"
        if report.stale:
            minutes = int(AUDIT_UNSEALED_ALERT.total_seconds() // 60)
            line += f"; some for over {minutes} minutes: is a `craig worker` running? (or links were cut)"
        lines.append(line)
    floor = report.floor
    line = f"retention floor: {floor.retention.days} days, set {floor.set_at:%Y-%m-%d}"
    if floor.ever_lowered:
        line += " (it was lowered at some time: only the database owner can do that)"
    lines.append(line)
    return "\n".join(lines)
