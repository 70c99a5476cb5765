"""The ``craig`` command: its manual, its subcommands, and how any failure becomes an exit code."""

from __future__ import annotations

import importlib.metadata
import os
import signal
import sys
from collections.abc import Sequence

import click

from craig.domain.constants import CLI_HELP_WIDTH_CHARS
from craig.entrypoints.cli.attachments import attachments_group
from craig.entrypoints.cli.audit import audit_group
from craig.entrypoints.cli.common import ExitCode, Refused
from craig.entrypoints.cli.config import config
from craig.entrypoints.cli.db import db
from craig.entrypoints.cli.dlx import dlx
from craig.entrypoints.cli.exchange import exchange_group
from craig.entrypoints.cli.keys import keys_group
from craig.entrypoints.cli.outbox import outbox_group
from craig.entrypoints.cli.serve import serve
from craig.entrypoints.cli.status import status
from craig.entrypoints.cli.token import token
from craig.entrypoints.cli.unrouted import unrouted_group
from craig.entrypoints.cli.worker import worker
from craig.entrypoints.runtime import StartupError
from craig.entrypoints.settings import SettingsError
from craig.ports.errors import PortError

MANUAL = """Craig: the back end for child-welfare case workers.

Cases, contacts and their attachments, foster homes and placements, public intake referrals,
triage rule sets, and data exchange with partner agencies, with one promise: a case worker
never loses a write and never sees one applied twice.

\b
Profiles (CRAIG_PROFILE):
  memory      everything in memory, gone at exit: tests and throw-away demos
  embedded    the default: one machine; Craig runs its own PostgreSQL under
              CRAIG_DATA_DIR, and `craig serve` runs the workers too
  production  PostgreSQL, RabbitMQ and S3 at the URLs you set; run `craig db
              upgrade` once per release, `craig serve` and `craig worker` anywhere

Settings come from CRAIG_* environment variables, `__` for nesting: CRAIG_DATABASE__URL is
database.url. A secret setting may instead be read from a file, CRAIG_DATABASE__URL_FILE=PATH.
An unknown CRAIG_ variable stops every command, with the closest setting as suggestion; the
variables Kubernetes injects for a Service named craig (CRAIG_SERVICE_HOST, CRAIG_PORT ...)
are ignored. `craig config` lists every setting; `craig config --effective` shows the values
in force and where each came from. Every command reads the same settings and data dir.

\b
Exit codes (each command's --help lists its own):
  0    success
  1    the command ran, and found something to act on (keys rotate: values remain)
  2    usage error, or it could not start: one line on stderr names the setting
       or the dependency, and the fix
  130  interrupted (Ctrl-C)
  141  stdout was closed before the output was written (`craig config | head -1`)

SIGTERM stops `serve` and `worker` gracefully (exit 0); any other command unwinds (exit 143).
"""


def _version() -> str:
    try:
        return importlib.metadata.version("craig")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@click.group(
    help=MANUAL, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": CLI_HELP_WIDTH_CHARS}
)
@click.version_option(_version(), "--version", prog_name="craig", message="%(prog)s %(version)s")
def craig() -> None:
    pass


for command in (
    serve,
    worker,
    db,
    token,
    status,
    dlx,
    outbox_group,
    unrouted_group,
    attachments_group,
    exchange_group,
    config,
    keys_group,
    audit_group,
):
    craig.add_command(command)


def _terminate(signum: int, _frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so `finally` blocks run (an embedded PostgreSQL this command
    started is stopped). `serve` and `worker` install their own graceful handlers."""
    raise SystemExit(128 + signum)


def _refuse(message: str, code: int = ExitCode.USAGE) -> int:
    click.echo(f"craig: {message}", err=True)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every failure an operator can cause ends as one line and an exit code."""
    signal.signal(signal.SIGTERM, _terminate)
    stdout = sys.stdout
    try:
        code = craig.main(args=argv, prog_name="craig", standalone_mode=False)
        sys.stdout.flush()  # a closed pipe shows here, not as a warning at interpreter exit
    except BrokenPipeError:
        return _stdout_closed()
    except SystemExit:
        if sys.stdout is not stdout:  # click met a closed stdout, wrapped it and exits 1
            sys.stdout = stdout
            return _stdout_closed()
        raise
    except click.exceptions.NoArgsIsHelpError as error:
        click.echo(error.format_message(), err=True)
        return ExitCode.USAGE
    except click.UsageError as error:
        where = f"; see `{error.ctx.command_path} --help`" if error.ctx is not None else ""
        return _refuse(f"{error.format_message().rstrip('.')}{where}", error.exit_code)
    except click.ClickException as error:
        return _refuse(error.format_message(), error.exit_code)
    except click.Abort:
        return ExitCode.INTERRUPTED
    except (SettingsError, StartupError, Refused) as error:
        return _refuse(str(error))
    except PortError as error:
        return _refuse(f"{type(error).__name__}: {error}")
    return code if isinstance(code, int) else ExitCode.OK


def _stdout_closed() -> int:
    """Whoever read stdout went away: point stdout at /dev/null so that flushing it at exit
    cannot fail again (the Python documentation's recipe), and end quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        pass  # stdout is no file (a test's capture): nothing will be flushed to a pipe
    return ExitCode.PIPE_CLOSED
