"""``craig db``: schema migrations (production never migrates implicitly)."""

from __future__ import annotations

import asyncio

import click

from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.cli.common import ExitCode, Refused, echo, exit_codes, run
from craig.entrypoints.runtime import running
from craig.entrypoints.settings import Needs


@click.group(short_help="Database migrations: upgrade, downgrade.")
def db() -> None:
    """Database migrations.

    Only the database is reached, and only its settings are needed: in production
    CRAIG_DATABASE__URL alone (no broker, object-store, token or encryption settings). The
    embedded profile starts its own PostgreSQL for the run (and stops it after).
    """


@db.command(epilog=exit_codes())
@click.argument("revision", default="head")
def upgrade(revision: str) -> int:
    """Apply migrations up to REVISION (default: head)."""
    return _migrate("upgrade", revision)


@db.command(epilog=exit_codes())
@click.argument("revision")
def downgrade(revision: str) -> int:
    """Revert migrations down to REVISION (a revision id, -1 for one step, base for all)."""
    return _migrate("downgrade", revision)


def _migrate(direction: str, revision: str) -> int:
    from alembic.util import CommandError
    from sqlalchemy.exc import DBAPIError

    from craig.adapters.postgres import migrations

    container = bootstrap(needs=Needs.DATABASE)
    url: str | None = container.database_url()
    if url is None:
        raise Refused(f"the {container.settings().profile} profile has no database to migrate")
    step = migrations.upgrade if direction == "upgrade" else migrations.downgrade

    async def main() -> int:
        async with running(container, schema="ignore", parts=("database",)):
            try:
                await asyncio.to_thread(step, url, revision)
            except CommandError as error:
                raise Refused(f"cannot {direction} to {revision!r}: {error}") from None
            except DBAPIError as error:  # e.g. a table lock not granted within the lock timeout
                cause = error.orig if error.orig is not None else error
                first = str(cause).splitlines()[0] if str(cause) else ""
                raise Refused(
                    f"cannot {direction} to {revision!r}: {type(cause).__name__}: {first} "
                    "(nothing of the failed revision was applied; run it again)"
                ) from None
        echo(f"database at revision {revision}")
        return ExitCode.OK

    return run(main())
